// Tokenizer features the real files leave unused (GPT-2 style ByteLevel with
// its regex and prefix space, legacy merges, TemplateProcessing, all Split
// behaviours, Digits, NFKC, ignore_merges, lstrip/rstrip/single_word and
// normalized added tokens, unk/fuse_unk, byte_fallback, no decoder), checked
// against goldens from Hugging Face tokenizers on variants of the synthetic
// tokenizer (tools/tokenizer/variants.mjs; files committed with the goldens).
#include <string>

#include <gtest/gtest.h>

#include "base/mapped_file.h"
#include "tokenize/golden_check.h"
#include "tokenize/test_util.h"
#include "tokenize/tokenizer.h"

namespace tern {
namespace {

class VariantTest : public ::testing::TestWithParam<const char*> {};

TEST_P(VariantTest, MatchesHuggingFace) {
  const std::string name = GetParam();
  const std::string dir = tok::testing::SourceDir() + "/tests/golden/tokenizer/";
  auto json = ReadFileToString(dir + name + ".tokenizer.json");
  ASSERT_TRUE(json.ok()) << json.status().message();
  tok::testing::GoldenHeader header;
  ASSERT_TRUE(tok::testing::ReadGoldenHeader(dir + name + ".jsonl", &header));
  ASSERT_EQ(tok::testing::Sha256Hex(*json), header.sha256) << "goldens and tokenizer disagree";
  auto t = Tokenizer::FromJson(*json);
  ASSERT_TRUE(t.ok()) << t.status().message();
  const auto counts = tok::testing::CheckGoldenFile(*t, dir + name + ".jsonl", name);
  EXPECT_EQ(counts.failures, 0);
  EXPECT_GE(counts.texts, 500);
}

INSTANTIATE_TEST_SUITE_P(Variants, VariantTest,
                         ::testing::Values("variant_gpt2", "variant_split", "variant_unk",
                                           "variant_byte_fallback"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace tern
