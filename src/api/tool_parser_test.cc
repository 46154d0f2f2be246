// Tool-call parsers: whole-text results against hand-written expectations
// (SGLang's qwen25/hermes/qwen3_coder semantics, see tool_parser.h), the same
// results under every split of the text, and the shape of streamed deltas.
#include <gtest/gtest.h>

#include "api/tool_parser.h"

namespace tern::api {
namespace {

ToolSpec Tool(std::string name, Json parameters = Json::object()) {
  ToolSpec t;
  t.name = std::move(name);
  t.parameters = std::move(parameters);
  return t;
}

std::vector<ToolSpec> WeatherTools() {
  return {Tool("get_weather", Json::parse(R"({"type": "object", "properties": {
              "location": {"type": "string"}, "days": {"type": "integer"},
              "metric": {"type": "boolean"}, "ratio": {"type": "number"},
              "opts": {"type": "object"}, "tags": {"type": "array"}},
              "required": ["location"]})")),
          Tool("get_time", Json::parse(R"({"type": "object", "properties": {"tz": {"type": "string"}}})"))};
}

ToolCallIdGenerator Counter() {
  auto n = std::make_shared<int>(0);
  return [n] { return "call_" + std::to_string((*n)++); };
}

struct Expected {
  std::string content;
  std::vector<std::pair<std::string, std::string>> calls;  // name, arguments
};

ToolParseResult Feed(ToolParserKind kind, const std::vector<std::string_view>& pieces) {
  auto p = ToolCallParser::Create(kind, WeatherTools(), Counter());
  ToolCallAccumulator acc;
  for (auto piece : pieces) acc.Add(p->Push(piece));
  acc.Add(p->Finish());
  return acc.Take();
}

void ExpectResult(const ToolParseResult& r, const Expected& e, const std::string& what) {
  EXPECT_EQ(r.content, e.content) << what;
  ASSERT_EQ(r.calls.size(), e.calls.size()) << what;
  for (size_t i = 0; i < e.calls.size(); ++i) {
    EXPECT_EQ(r.calls[i].id, "call_" + std::to_string(i)) << what;
    EXPECT_EQ(r.calls[i].name, e.calls[i].first) << what;
    EXPECT_EQ(r.calls[i].arguments, e.calls[i].second) << what;
  }
}

void ExpectAllSplits(ToolParserKind kind, std::string_view text, const Expected& e) {
  ExpectResult(ParseToolCalls(kind, WeatherTools(), text, Counter()), e, "whole");
  const size_t n = text.size();
  for (size_t a = 0; a <= n; ++a) {
    ExpectResult(Feed(kind, {text.substr(0, a), text.substr(a)}), e, "split " + std::to_string(a));
    if (::testing::Test::HasFailure()) return;
  }
  const size_t step = n / 12 + 1;  // a sample of 3-piece splits; all 2-piece ones above
  for (size_t a = 0; a < n; a += step)
    for (size_t b = a; b <= n; b += step + 1) {
      ExpectResult(Feed(kind, {text.substr(0, a), text.substr(a, b - a), text.substr(b)}), e,
                   "splits " + std::to_string(a) + "," + std::to_string(b));
      if (::testing::Test::HasFailure()) return;
    }
  std::vector<std::string_view> bytes;
  for (size_t i = 0; i < n; ++i) bytes.push_back(text.substr(i, 1));
  ExpectResult(Feed(kind, bytes), e, "bytes");
}

TEST(ToolParser, Names) {
  EXPECT_EQ(ToolParserFromName("qwen25"), ToolParserKind::kQwen25);
  EXPECT_EQ(ToolParserFromName("qwen"), ToolParserKind::kQwen25);
  EXPECT_EQ(ToolParserFromName("hermes"), ToolParserKind::kHermes);
  EXPECT_EQ(ToolParserFromName("qwen3_coder"), ToolParserKind::kQwen3Coder);
  EXPECT_FALSE(ToolParserFromName("llama3"));
  const std::string id = RandomToolCallId();
  ASSERT_EQ(id.size(), 29u);
  EXPECT_EQ(id.substr(0, 5), "call_");
  EXPECT_EQ(id.find_first_not_of("0123456789abcdef", 5), std::string::npos);
  EXPECT_NE(id, RandomToolCallId());
}

// ---- qwen25 / hermes --------------------------------------------------------

TEST(HermesToolParser, Qwen3StyleCallWithPreamble) {
  for (auto kind : {ToolParserKind::kHermes, ToolParserKind::kQwen25})
    ExpectAllSplits(kind,
                    "I'll check the weather for you.\n\n<tool_call>\n{\"name\": \"get_weather\", "
                    "\"arguments\": {\"location\": \"Paris, France\", \"days\": 3}}\n</tool_call>",
                    {"I'll check the weather for you.\n\n",
                     {{"get_weather", R"({"location": "Paris, France", "days": 3})"}}});
}

TEST(HermesToolParser, ArgumentsAreReserializedLikeJsonDumps) {
  ExpectAllSplits(ToolParserKind::kHermes,
                  R"(<tool_call>{"name":"get_weather","arguments":{"location":"caf\u00e9 \"x\"","metric":true,"ratio":1.50,"tags":["a","b"],"n":null}}</tool_call>)",
                  {"", {{"get_weather", R"({"location": "café \"x\"", "metric": true, "ratio": 1.5, "tags": ["a", "b"], "n": null})"}}});
}

TEST(HermesToolParser, TwoCallsAndTrailingText) {
  ExpectAllSplits(ToolParserKind::kHermes,
                  "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Oslo\"}}\n"
                  "</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"tz\": \"CET\"}}\n"
                  "</tool_call>\nDone.",
                  {"\n\nDone.",
                   {{"get_weather", R"({"location": "Oslo"})"}, {"get_time", R"({"tz": "CET"})"}}});
}

TEST(HermesToolParser, KeyOrderAndAliases) {
  // "arguments" before "name", "parameters" for "arguments", no arguments.
  ExpectAllSplits(ToolParserKind::kHermes,
                  R"(<tool_call>{"arguments": {"tz": "UTC"}, "name": "get_time"}</tool_call>)"
                  R"(<tool_call>{"name": "get_time", "parameters": {"tz": "PST"}}</tool_call>)"
                  R"(<tool_call>{"name": "get_time"}</tool_call>)",
                  {"", {{"get_time", R"({"tz": "UTC"})"}, {"get_time", R"({"tz": "PST"})"}, {"get_time", "{}"}}});
}

TEST(HermesToolParser, UnparseableCallsStayContent) {
  // Not JSON, unknown function, no name, not an object: verbatim content.
  const std::string bad =
      "<tool_call>\n{\"name\": get_weather}\n</tool_call>"
      "<tool_call>{\"name\": \"launch_rockets\", \"arguments\": {}}</tool_call>"
      "<tool_call>{\"arguments\": {\"x\": 1}}</tool_call>"
      "<tool_call>[1, 2]</tool_call>";
  ExpectAllSplits(ToolParserKind::kHermes, bad, {bad, {}});
}

TEST(HermesToolParser, BrokenAfterTheCallStartedKeepsWhatWasSent) {
  ExpectAllSplits(ToolParserKind::kHermes,
                  "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\" oops}}"
                  "</tool_call>after",
                  {"after", {{"get_weather", R"({"location": "Paris")"}}});
}

TEST(HermesToolParser, ToleratesExtraBraceStrayTagsAndMissingEnd) {
  ExpectAllSplits(ToolParserKind::kHermes,
                  "a</tool_call>b<tool_call>{\"name\": \"get_time\", \"arguments\": {\"tz\": \"UTC\"}}}\n"
                  "</tool_call><tool_call>{\"name\": \"get_time\", \"arguments\": {}}",
                  {"ab", {{"get_time", R"({"tz": "UTC"})"}, {"get_time", "{}"}}});
}

TEST(HermesToolParser, TruncatedCalls) {
  // Cut inside the arguments: the call keeps the arguments sent so far.
  ExpectAllSplits(ToolParserKind::kHermes,
                  "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Par",
                  {"", {{"get_weather", R"({"location": "Par)"}}});
  // Cut before the call could start: content.
  ExpectAllSplits(ToolParserKind::kHermes, "Sure.<tool_call>\n{\"name\": \"get_wea",
                  {"Sure.<tool_call>\n{\"name\": \"get_wea", {}});
}

TEST(HermesToolParser, EndTagInsideAStringIsNotTheEnd) {
  ExpectAllSplits(ToolParserKind::kHermes,
                  R"(<tool_call>{"name": "get_time", "arguments": {"tz": "</tool_call>"}}</tool_call>)",
                  {"", {{"get_time", R"({"tz": "</tool_call>"})"}}});
}

TEST(HermesToolParser, StringArgumentsAreDumpedAsAString) {
  ExpectAllSplits(ToolParserKind::kHermes,
                  R"(<tool_call>{"name": "get_time", "arguments": "{\"tz\": 1}"}</tool_call>)",
                  {"", {{"get_time", R"("{\"tz\": 1}")"}}});
}

TEST(HermesToolParser, StreamsNameFirstThenArgumentPieces) {
  auto p = ToolCallParser::Create(ToolParserKind::kHermes, WeatherTools(), Counter());
  ToolParseDelta d = p->Push("Let me check.<tool_call>\n{\"name\": \"get_weather\", ");
  EXPECT_EQ(d.content, "Let me check.");
  EXPECT_TRUE(d.calls.empty());  // the name alone does not start a call yet
  d = p->Push("\"arguments\": {\"location\": \"Pa");
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_EQ(d.calls[0].index, 0);
  EXPECT_EQ(d.calls[0].id, "call_0");
  EXPECT_EQ(d.calls[0].name, "get_weather");
  EXPECT_EQ(d.calls[0].arguments, R"({"location": "Pa)");
  d = p->Push("ris\"}}\n</tool_call>");
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_EQ(d.calls[0].id, "");
  EXPECT_EQ(d.calls[0].name, "");
  EXPECT_EQ(d.calls[0].arguments, R"(ris"})");
  EXPECT_TRUE(p->has_calls());
  EXPECT_TRUE(p->Finish().empty());
}

TEST(HermesToolParser, NoToolsMeansNoParsing) {
  const std::string text = "<tool_call>{\"name\": \"get_time\", \"arguments\": {}}</tool_call>";
  const ToolParseResult r = ParseToolCalls(ToolParserKind::kHermes, {}, text, Counter());
  EXPECT_EQ(r.content, text);
  EXPECT_TRUE(r.calls.empty());
}

// ---- qwen3_coder --------------------------------------------------------------

TEST(Qwen3CoderToolParser, TypicalCall) {
  ExpectAllSplits(ToolParserKind::kQwen3Coder,
                  "Let me look that up.\n\n<tool_call>\n<function=get_weather>\n<parameter=location>\n"
                  "Paris, France\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n"
                  "</tool_call>",
                  {"Let me look that up.\n\n", {{"get_weather", R"({"location": "Paris, France", "days": 3})"}}});
}

TEST(Qwen3CoderToolParser, ValuesConvertedBySchema) {
  ExpectAllSplits(ToolParserKind::kQwen3Coder,
                  "<tool_call>\n<function=get_weather>\n"
                  "<parameter=metric>\nTrue\n</parameter>\n"
                  "<parameter=ratio>\n2.50\n</parameter>\n"
                  "<parameter=opts>\n{'a': [1, None]}\n</parameter>\n"
                  "<parameter=tags>\n[\"x\", \"y\"]\n</parameter>\n"
                  "<parameter=days>\nthree\n</parameter>\n"
                  "<parameter=extra>\n42\n</parameter>\n"
                  "<parameter=location>\nnull\n</parameter>\n"
                  "</function>\n</tool_call>",
                  {"", {{"get_weather", R"({"metric": true, "ratio": 2.5, "opts": {"a": [1, null]}, "tags": ["x", "y"], "days": "three", "extra": "42", "location": null})"}}});
}

TEST(Qwen3CoderToolParser, MultilineStringValuesKeepInnerNewlines) {
  ExpectAllSplits(ToolParserKind::kQwen3Coder,
                  "<tool_call>\n<function=get_time>\n<parameter=tz>\n\ndef f():\n    return \"x\"\n\n"
                  "</parameter>\n</function>\n</tool_call>",
                  {"", {{"get_time", R"({"tz": "\ndef f():\n    return \"x\"\n"})"}}});
}

TEST(Qwen3CoderToolParser, LooseStructure) {
  // A parameter ended by the next one, a function ended by </tool_call>, a
  // function without <tool_call>, an unknown function (kept, as SGLang).
  ExpectAllSplits(ToolParserKind::kQwen3Coder,
                  "<tool_call><function=get_weather><parameter=location>Rome<parameter=days>2"
                  "</tool_call>\n<function=get_time>\n</function>\n"
                  "<tool_call>\n<function=mystery>\n<parameter=q>\n1\n</parameter>\n</function>\n</tool_call>",
                  {"\n\n",
                   {{"get_weather", R"({"location": "Rome", "days": 2})"},
                    {"get_time", "{}"},
                    {"mystery", R"({"q": "1"})"}}});
}

TEST(Qwen3CoderToolParser, BlocksWithoutAFunctionStayContent) {
  const std::string text = "a<tool_call>\n{\"name\": \"get_time\"}\n</tool_call>b";
  ExpectAllSplits(ToolParserKind::kQwen3Coder, text, {text, {}});
  ExpectAllSplits(ToolParserKind::kQwen3Coder, "x<tool_call>\n<function=bad\nname>", {"x<tool_call>\n<function=bad\nname>", {}});
}

TEST(Qwen3CoderToolParser, TruncatedInsideAValue) {
  ExpectAllSplits(ToolParserKind::kQwen3Coder,
                  "<tool_call>\n<function=get_weather>\n<parameter=location>\nBerl",
                  {"", {{"get_weather", R"({"location": "Berl"})"}}});
  ExpectAllSplits(ToolParserKind::kQwen3Coder, "<tool_call>\n<function=get_weather>\n<parameter=days>\n4",
                  {"", {{"get_weather", R"({"days": 4})"}}});
}

TEST(Qwen3CoderToolParser, StringValuesStreamBeforeTheClosingTag) {
  auto p = ToolCallParser::Create(ToolParserKind::kQwen3Coder, WeatherTools(), Counter());
  ToolParseDelta d = p->Push("<tool_call>\n<function=get_weather>\n");
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_EQ(d.calls[0].name, "get_weather");
  EXPECT_EQ(d.calls[0].arguments, "");
  d = p->Push("<parameter=location>\nNew Yo");
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_EQ(d.calls[0].arguments, R"({"location": "New Yo)");
  d = p->Push("rk\n");  // the trailing "\n" may be the one that gets trimmed
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_EQ(d.calls[0].arguments, "rk");
  d = p->Push("</parameter>\n<parameter=days>\n1");  // non-strings wait for the end
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_EQ(d.calls[0].arguments, "\"");
  d = p->Push("0\n</parameter>\n</function>\n</tool_call>");
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_EQ(d.calls[0].arguments, R"(, "days": 10})");
}

TEST(Qwen3CoderToolParser, NullAndShortStringsAreNotOpenedEarly) {
  ExpectAllSplits(ToolParserKind::kQwen3Coder,
                  "<tool_call><function=get_time><parameter=tz>\nNull\n</parameter></function></tool_call>"
                  "<tool_call><function=get_time><parameter=tz>nul</parameter></function></tool_call>"
                  "<tool_call><function=get_time><parameter=tz>null\nx</parameter></function></tool_call>",
                  {"", {{"get_time", R"({"tz": null})"}, {"get_time", R"({"tz": "nul"})"}, {"get_time", R"({"tz": "null\nx"})"}}});
}

}  // namespace
}  // namespace tern::api
