// ChatConstraint: the grammar of a forced tool call accepts the calls the
// qwen25/hermes parser reads (the named or any listed tool, arguments valid
// under its schema, parallel calls when allowed) and nothing else; without
// forcing, the request's own constraint passes through.
#include <gtest/gtest.h>

#include "api/structured_output.h"
#include "grammar/test_util.h"

namespace tern::api {
namespace {

ChatRequest WithTools(ToolChoiceMode mode, const std::string& name = "") {
  auto r = ParseChatRequest(Json::parse(R"({"messages": [{"role": "user", "content": "x"}], "tools": [
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
      "properties": {"city": {"type": "string"}, "unit": {"enum": ["c", "f"]}}, "required": ["city"]}}},
    {"type": "function", "function": {"name": "add", "parameters": {"type": "object",
      "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}}}]})"));
  EXPECT_TRUE(r.ok());
  ChatRequest req = std::move(r).value();
  req.tool_choice = {mode, name};
  return req;
}

bool Accepts(const ConstraintRequest& c, const std::string& text) {
  auto g = grammar::testing::CompileFor({.kind = grammar::ConstraintKind::kEbnf, .text = c.text},
                                        grammar::testing::ByteVocab());
  EXPECT_TRUE(g.ok()) << g.status().message() << "\n" << c.text;
  return g.ok() && grammar::testing::FullMatch(*g, text);
}

TEST(ChatConstraint, ForcedToolCalls) {
  const ServerParsers parsers{.tool_call = ToolParserKind::kQwen25};
  ChatRequest named = WithTools(ToolChoiceMode::kFunction, "add");
  auto c = ChatConstraint(named, parsers, ForceToolCall(named, parsers, "prompt"));
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(*c);
  // ForceToolCall's reply_prefix ends at `"arguments": `; the grammar takes it from there.
  EXPECT_TRUE(Accepts(**c, "{\"a\": 1, \"b\": -2}}\n</tool_call>"));
  EXPECT_FALSE(Accepts(**c, "{\"a\": 1}}\n</tool_call>"));
  EXPECT_FALSE(Accepts(**c, "{\"a\": \"1\", \"b\": 2}}\n</tool_call>"));

  ChatRequest required = WithTools(ToolChoiceMode::kRequired);
  c = ChatConstraint(required, parsers, ForceToolCall(required, parsers, "prompt"));
  ASSERT_TRUE(c.ok() && *c);
  EXPECT_TRUE(Accepts(**c, "get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"));
  EXPECT_TRUE(Accepts(**c, "add\", \"arguments\": {\"a\": 1, \"b\": 2}}\n</tool_call>\n<tool_call>\n{\"name\": "
                           "\"get_weather\", \"arguments\": {\"city\": \"Oslo\", \"unit\": \"c\"}}\n</tool_call>"));
  EXPECT_FALSE(Accepts(**c, "sub\", \"arguments\": {\"a\": 1, \"b\": 2}}\n</tool_call>"));
  EXPECT_FALSE(Accepts(**c, "get_weather\", \"arguments\": {\"unit\": \"c\"}}\n</tool_call>"));
  required.parallel_tool_calls = false;
  c = ChatConstraint(required, parsers, ForceToolCall(required, parsers, "prompt"));
  EXPECT_FALSE(Accepts(**c, "add\", \"arguments\": {\"a\": 1, \"b\": 2}}\n</tool_call>\n<tool_call>\n{\"name\": "
                            "\"add\", \"arguments\": {\"a\": 1, \"b\": 2}}\n</tool_call>"));

  // No forcing: the request's own constraint, or none.
  ChatRequest plain = WithTools(ToolChoiceMode::kAuto);
  plain.sampling.constraint = ConstraintRequest{.kind = ConstraintRequest::Kind::kRegex, .text = "a+"};
  c = ChatConstraint(plain, parsers, ForceToolCall(plain, parsers, "prompt"));
  ASSERT_TRUE(c.ok() && *c);
  EXPECT_EQ((*c)->text, "a+");
  // A parameters schema the compiler cannot honour is a 400 naming the keyword.
  ChatRequest bad = WithTools(ToolChoiceMode::kFunction, "add");
  bad.tools[1].parameters = Json::parse(R"({"type": "object", "patternProperties": {"^x": {}}})");
  c = ChatConstraint(bad, parsers, ForceToolCall(bad, parsers, "prompt"));
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("patternProperties"), std::string::npos) << c.error().message;
}

}  // namespace
}  // namespace tern::api

namespace tern::api {
namespace {
TEST(ChatConstraint, Qwen3CoderXmlCalls) {
  const ServerParsers parsers{.tool_call = ToolParserKind::kQwen3Coder};
  ChatRequest named = WithTools(ToolChoiceMode::kFunction, "get_weather");
  auto c = ChatConstraint(named, parsers, ForceToolCall(named, parsers, "prompt"));
  ASSERT_TRUE(c.ok() && *c) << (c.ok() ? "" : c.error().message);
  // reply_prefix: "<tool_call>\n<function=get_weather>\n".
  EXPECT_TRUE(Accepts(**c, "<parameter=city>\nNew York\n</parameter>\n</function>\n</tool_call>"));
  EXPECT_TRUE(Accepts(**c, "<parameter=city>\nOslo\n</parameter>\n<parameter=unit>\nc\n</parameter>\n</function>\n</tool_call>"));
  EXPECT_FALSE(Accepts(**c, "<parameter=city>\nOslo\n</parameter>\n<parameter=unit>\nk\n</parameter>\n</function>\n</tool_call>"));
  EXPECT_FALSE(Accepts(**c, "<parameter=unit>\nc\n</parameter>\n</function>\n</tool_call>"));  // city is required
  ChatRequest required = WithTools(ToolChoiceMode::kRequired);
  c = ChatConstraint(required, parsers, ForceToolCall(required, parsers, "prompt"));
  ASSERT_TRUE(c.ok() && *c);
  EXPECT_TRUE(Accepts(**c, "add>\n<parameter=a>\n1\n</parameter>\n<parameter=b>\n2\n</parameter>\n</function>\n</tool_call>"));
  EXPECT_FALSE(Accepts(**c, "add>\n<parameter=a>\nx\n</parameter>\n<parameter=b>\n2\n</parameter>\n</function>\n</tool_call>"));
}
}  // namespace
}  // namespace tern::api

namespace tern::api {
namespace {
TEST(ChatConstraint, AfterReasoning) {
  ChatRequest req = WithTools(ToolChoiceMode::kAuto);
  ChatParseConfig cfg;
  EXPECT_FALSE(ConstraintAfterReasoning(cfg, req));  // no reasoning parser
  cfg.reasoning = ReasoningConfig{};
  EXPECT_TRUE(ConstraintAfterReasoning(cfg, req));  // qwen3: reasons unless told not to
  req.chat_template_kwargs["enable_thinking"] = false;
  EXPECT_FALSE(ConstraintAfterReasoning(cfg, req));
  cfg.reasoning->force_reasoning = true;  // the prompt opened <think>
  EXPECT_TRUE(ConstraintAfterReasoning(cfg, req));
  cfg.reasoning->separate_reasoning = false;  // the raw text is the content
  EXPECT_FALSE(ConstraintAfterReasoning(cfg, req));
}
}  // namespace
}  // namespace tern::api
