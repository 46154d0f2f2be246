// Judgements and degenerate-output detection on recorded and synthetic replies.
#include "check/judge.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "check/checks_common.h"
#include "check/degenerate.h"
#include "check/test_util.h"

namespace tern::check {
namespace {

using testing::ReplyFile;

ChatResult Reply(std::optional<std::string> content, std::optional<std::string> reasoning = std::nullopt) {
  ChatResult r;
  r.http_status = 200;
  r.content = std::move(content);
  r.reasoning = std::move(reasoning);
  if (r.reasoning) r.reasoning_field = "reasoning_content";
  return r;
}

bool Contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// special_tokens' scan: <|word|> and </s>, in content or reasoning; a long
// run after "<|" is scanned, not recursed (std::regex overflowed the stack).
TEST(SpecialTokenFinding, FindsTokensAndScansLongRuns) {
  ChatResult r;
  r.content = "hello <|im_end|> there";
  EXPECT_EQ(SpecialTokenFinding(r), "content holds '<|im_end|>'");
  r.content = "a </s>";
  EXPECT_EQ(SpecialTokenFinding(r), "content holds '</s>'");
  r.content = "x <| y |> <|a b|> <||> <|end";
  EXPECT_EQ(SpecialTokenFinding(r), "");
  r.content = "<|" + std::string(1000000, 'a');
  EXPECT_EQ(SpecialTokenFinding(r), "");
  r.content = "<|" + std::string(1000000, 'a') + "|>";
  EXPECT_EQ(SpecialTokenFinding(r).size(), std::string("content holds ''").size() + 1000004);
  r.content = "fine";
  r.reasoning = "think <|endoftext|>";
  EXPECT_EQ(SpecialTokenFinding(r), "reasoning holds '<|endoftext|>'");
}

TEST(NumbersIn, Forms) {
  EXPECT_EQ(NumbersIn("17 × 19 = 323."), (std::vector<double>{17, 19, 323}));
  EXPECT_EQ(NumbersIn("323.0"), (std::vector<double>{323}));
  EXPECT_EQ(NumbersIn("It is 3.5, or -2"), (std::vector<double>{3.5, -2}));
  EXPECT_EQ(NumbersIn("1,234 apples"), (std::vector<double>{1234}));
  EXPECT_EQ(NumbersIn("17,19"), (std::vector<double>{17, 19}));
  EXPECT_EQ(NumbersIn("x-2"), (std::vector<double>{2}));  // a hyphen, not a sign
  EXPECT_TRUE(NumbersIn("no digits").empty());
}

TEST(JudgeExactOk, CaseAndPunctuationAside) {
  for (const char* ok : {"OK", "ok", "OK.", "**OK**", " \"Ok!\"\n"}) EXPECT_TRUE(JudgeExactOk(Reply(ok)).pass) << ok;
  for (const char* bad : {"Okay", "OK, sure", "No", "K"}) EXPECT_FALSE(JudgeExactOk(Reply(bad)).pass) << bad;
  Verdict v = JudgeExactOk(Reply(std::nullopt, "The user wants me to say OK"));
  EXPECT_FALSE(v.pass);
  EXPECT_TRUE(Contains(v.detail, "content is null")) << v.detail;
  v = JudgeExactOk(Reply("<think>\nhmm\n</think>\n\nOK"));
  EXPECT_FALSE(v.pass);
  EXPECT_TRUE(Contains(v.detail, "<think>")) << v.detail;
  v = JudgeExactOk(Reply("!!!!!!!!!!!!"));
  EXPECT_FALSE(v.pass);
  EXPECT_TRUE(Contains(v.detail, "degenerate output")) << v.detail;
}

TEST(JudgeArithmeticNoThinking, OnlyTheAnswer) {
  EXPECT_TRUE(JudgeArithmeticNoThinking(Reply("323"), 323).pass);
  EXPECT_TRUE(JudgeArithmeticNoThinking(Reply("The answer is **323**."), 323).pass);
  Verdict v = JudgeArithmeticNoThinking(Reply("17 × 19 = 323"), 323);
  EXPECT_FALSE(v.pass);
  EXPECT_TRUE(Contains(v.detail, "other numbers besides 323 (17, 19)")) << v.detail;
  v = JudgeArithmeticNoThinking(Reply("324"), 323);
  EXPECT_FALSE(v.pass);
  EXPECT_TRUE(Contains(v.detail, "no 323")) << v.detail;
  v = JudgeArithmeticNoThinking(Reply("323", "17*19 is 323"), 323);
  EXPECT_FALSE(v.pass);
  EXPECT_TRUE(Contains(v.detail, "thinking was not turned off")) << v.detail;
  v = JudgeArithmeticNoThinking(Reply("<think>\n17*19\n</think>\n\n323"), 323);
  EXPECT_FALSE(v.pass);
  EXPECT_TRUE(Contains(v.detail, "<think> tags")) << v.detail;
  v = JudgeArithmeticNoThinking(Reply(std::nullopt, "323"), 323);
  EXPECT_FALSE(v.pass);
  EXPECT_TRUE(Contains(v.detail, "content is null and the answer went to reasoning_content")) << v.detail;
}

TEST(JudgeArithmeticThinking, RecordedDialects) {
  for (const char* f : {"sglang_thinking.json", "vllm_reasoning.json", "llamacpp_thinking.json"}) {
    Verdict v = JudgeArithmeticThinking(ParseChatReply(200, ReplyFile(f)), 323);
    EXPECT_TRUE(v.pass) << f << ": " << v.detail;
  }
  // vLLM: content null after running out of tokens: a failure with the reason.
  Verdict v = JudgeArithmeticThinking(ParseChatReply(200, ReplyFile("vllm_content_null.json")), 323);
  EXPECT_FALSE(v.pass);
  EXPECT_TRUE(Contains(v.detail, "content is null after")) << v.detail;
  EXPECT_TRUE(Contains(v.detail, "hit max_tokens while still thinking")) << v.detail;
  // A thinking-off reply has no reasoning: thinking on did not work.
  v = JudgeArithmeticThinking(ParseChatReply(200, ReplyFile("sglang_no_thinking.json")), 323);
  EXPECT_FALSE(v.pass);
  EXPECT_TRUE(Contains(v.detail, "no reasoning came back")) << v.detail;
}

TEST(JudgeArithmeticThinking, SyntheticFailures) {
  Verdict v = JudgeArithmeticThinking(Reply("<think>17*19=323</think>\n\n323"), 323);
  EXPECT_FALSE(v.pass);
  EXPECT_TRUE(Contains(v.detail, "inside content")) << v.detail;
  ChatResult r = Reply(std::nullopt, "17*19 = 323. So the answer is 323.");
  r.finish_reason = "stop";
  v = JudgeArithmeticThinking(r, 323);
  EXPECT_FALSE(v.pass);
  EXPECT_TRUE(Contains(v.detail, "content is null")) << v.detail;
  EXPECT_TRUE(Contains(v.detail, "reasoning parser kept it")) << v.detail;
  v = JudgeArithmeticThinking(Reply("The answer is 324.", "hmm"), 323);
  EXPECT_FALSE(v.pass);
  EXPECT_TRUE(Contains(v.detail, "lacks 323")) << v.detail;
  ChatResult failed;
  failed.failure = "HTTP 500: boom";
  EXPECT_EQ(JudgeArithmeticThinking(failed, 323).detail, "HTTP 500: boom");
}

TEST(JudgeContains, CaseInsensitiveAndReasoningOnly) {
  EXPECT_TRUE(JudgeContains(Reply("The code word was marigold."), "MARIGOLD", "code word").pass);
  Verdict v = JudgeContains(Reply("I don't know", "they said MARIGOLD"), "MARIGOLD", "code word");
  EXPECT_FALSE(v.pass);
  EXPECT_TRUE(Contains(v.detail, "only in the reasoning")) << v.detail;
  EXPECT_FALSE(JudgeContains(Reply("PELICAN"), "MARIGOLD", "code word").pass);
}

TEST(JudgeSameText, NullAndEmptyAreEqualDifferencesShown) {
  EXPECT_TRUE(JudgeSameText(Reply("The sea is calm."), Reply("The sea is calm.")).pass);
  Verdict v = JudgeSameText(Reply("The sea is calm."), Reply("The sea is rough."));
  EXPECT_FALSE(v.pass);
  EXPECT_TRUE(Contains(v.detail, "at byte 12")) << v.detail;
  EXPECT_TRUE(JudgeSameText(Reply(""), Reply(std::nullopt)).pass);
}

TEST(JudgeStreamMatches, Cases) {
  ChatResult plain = Reply("Hello world");
  plain.completion_tokens = 3;
  ChatResult s = Reply("Hello world");
  s.streamed = true;
  s.done_seen = true;
  s.events = 5;
  EXPECT_TRUE(JudgeStreamMatches(plain, s).pass);
  EXPECT_TRUE(Contains(JudgeStreamMatches(plain, s).detail, "no usage chunk"));
  s.usage_seen = true;
  s.completion_tokens = 3;
  EXPECT_TRUE(JudgeStreamMatches(plain, s).pass);
  s.completion_tokens = 4;
  EXPECT_TRUE(Contains(JudgeStreamMatches(plain, s).detail,
                       "usage chunk counts 4 completion tokens, the non-streamed reply 3"));
  s.completion_tokens = 3;
  s.content = "Hello  world";
  EXPECT_FALSE(JudgeStreamMatches(plain, s).pass);
  s.content = "Hello world";
  s.stream_error = "stream ended without [DONE] after 3 events (read failed)";
  EXPECT_EQ(JudgeStreamMatches(plain, s).detail, s.stream_error);
}

TEST(ValidateSchema, WeatherTool) {
  const auto schema = nlohmann::json::parse(R"({"type":"object","properties":{"location":{"type":"string"},
      "unit":{"type":"string","enum":["celsius","fahrenheit"]}},"required":["location"],"additionalProperties":false})");
  EXPECT_TRUE(ValidateSchema(nlohmann::json::parse(R"({"location":"Paris"})"), schema).empty());
  EXPECT_TRUE(ValidateSchema(nlohmann::json::parse(R"({"location":"Paris","unit":"celsius"})"), schema).empty());
  auto errs = ValidateSchema(nlohmann::json::parse(R"({"unit":"kelvin","city":"Paris"})"), schema);
  ASSERT_EQ(errs.size(), 3u);
  EXPECT_EQ(errs[0], "arguments lacks required 'location'");
  EXPECT_TRUE(Contains(errs[1], "has unexpected property 'city'") || Contains(errs[2], "unexpected property 'city'"));
  errs = ValidateSchema(nlohmann::json::parse(R"({"location":3})"), schema);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0], "arguments.location should be string, is 3");
  EXPECT_EQ(ValidateSchema(nlohmann::json::parse(R"([1])"), schema).size(), 1u);
  EXPECT_TRUE(ValidateSchema(nlohmann::json::parse("2.0"), nlohmann::json::parse(R"({"type":"integer"})")).empty());
}

TEST(JudgeToolCall, RecordedAndBroken) {
  const auto schema = nlohmann::json::parse(R"({"type":"object","properties":{"location":{"type":"string"},
      "unit":{"type":"string","enum":["celsius","fahrenheit"]}},"required":["location"],"additionalProperties":false})");
  Verdict v = JudgeToolCall(ParseChatReply(200, ReplyFile("tool_call_sglang.json")), "get_weather", schema);
  EXPECT_TRUE(v.pass) << v.detail;
  ChatResult inline_call =
      Reply("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\"}}\n</tool_call>");
  v = JudgeToolCall(inline_call, "get_weather", schema);
  EXPECT_FALSE(v.pass);
  EXPECT_TRUE(Contains(v.detail, "came back in content")) << v.detail;
  ChatResult bad = Reply("");
  bad.tool_calls.push_back({"call_1", "get_weather", "{\"location\": \"Paris\""});
  EXPECT_TRUE(Contains(JudgeToolCall(bad, "get_weather", schema).detail, "not a JSON object"));
  bad.tool_calls[0].arguments = R"({"location":"Paris","unit":"kelvin"})";
  EXPECT_TRUE(Contains(JudgeToolCall(bad, "get_weather", schema).detail, "is not one of"));
  bad.tool_calls[0] = {"call_1", "get_time", "{}"};
  EXPECT_TRUE(Contains(JudgeToolCall(bad, "get_weather", schema).detail, "called 'get_time'"));
  EXPECT_FALSE(JudgeToolCall(Reply("It is sunny."), "get_weather", schema).pass);
}

TEST(JudgeErrorReply, Shapes) {
  EXPECT_TRUE(JudgeErrorReply(400, ReplyFile("error_sglang_flat.json")).pass);
  EXPECT_TRUE(JudgeErrorReply(400, ReplyFile("error_vllm_nested.json")).pass);
  EXPECT_TRUE(JudgeErrorReply(422, R"({"detail":[{"msg":"field required"}]})").pass);
  EXPECT_FALSE(JudgeErrorReply(500, R"({"object":"error","message":"boom"})").pass);
  EXPECT_FALSE(JudgeErrorReply(200, R"({"choices":[]})").pass);
  EXPECT_TRUE(Contains(JudgeErrorReply(400, "Bad Request").detail, "not a JSON error"));
  EXPECT_TRUE(Contains(JudgeErrorReply(400, R"({"error":{"type":"x"}})").detail, "no message"));
}

TEST(Degenerate, BrokenKernelOutputsAreCaught) {
  auto has = [](const std::vector<std::string>& f, const std::string& part) {
    for (const auto& s : f)
      if (Contains(s, part)) return true;
    return false;
  };
  EXPECT_TRUE(has(FindDegenerateText("!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"), "run of 32 '!'"));
  EXPECT_TRUE(has(FindDegenerateText("++++++++++++++++++"), "run of 18 '+'"));
  EXPECT_TRUE(has(FindDegenerateText("!!!!!!!!"), "8 of 8 characters are '!'"));  // short, still caught
  auto words = FindDegenerateText("Sure! the the the the the the the the the the the");
  ASSERT_EQ(words.size(), 1u);
  EXPECT_TRUE(Contains(words[0], "the") && Contains(words[0], "repeated 11 times")) << words[0];  // 11 x " the"
  EXPECT_TRUE(has(FindDegenerateText("ababababababababababababababababab"), "'ab' repeated 17 times"));
  ChatResult nan = ParseChatReply(200, ReplyFile("sglang_nan_logprobs.json"));
  auto f = FindDegenerate(nan);
  EXPECT_TRUE(has(f, "2 non-finite numbers")) << JoinFindings(f);
  EXPECT_TRUE(has(f, "2 of 2 token logprobs are NaN or infinite")) << JoinFindings(f);
  ChatResult empty = Reply("");
  EXPECT_TRUE(has(FindDegenerate(empty), "empty output"));
  ChatResult rep = Reply("xyxyxy");
  rep.tokens.assign(12, "++");
  rep.logprobs.assign(12, -0.1);
  EXPECT_TRUE(has(FindDegenerate(rep), "token '++' repeated 12 times"));
  ChatResult clamp = Reply("fine");
  clamp.logprobs = {-0.5, -9999.0, 0.7};
  f = FindDegenerate(clamp);
  EXPECT_TRUE(has(f, "1 of 3 token logprobs are NaN or infinite")) << JoinFindings(f);
  EXPECT_TRUE(has(f, "1 token logprobs are above 0")) << JoinFindings(f);
  ChatResult broken = ParseChatReply(200, "{\"choices\":[{\"message\":{\"content\":\"caf\xC3 \xEF\xBF\xBD\"}}]}");
  f = FindDegenerate(broken);
  EXPECT_TRUE(has(f, "1 invalid UTF-8 sequence")) << JoinFindings(f);
  EXPECT_TRUE(has(f, "1 U+FFFD replacement characters")) << JoinFindings(f);
}

TEST(Degenerate, OrdinaryTextPasses) {
  const char* clean[] = {
      "The ocean covers most of the planet. Its depths remain largely unexplored. Waves carry energy across it.",
      "| a | b |\n|---|---|\n| 1 | 2 |",
      "---\ntitle: x\n---",
      "def f(x):\n                return x  # indented",
      "one two three four five six seven eight nine ten eleven twelve",
      "OK",
      "323",
      "Hmm... let me think.",
      "1000000000",
      "\xe2\x80\x94\xe2\x80\x94\xe2\x80\x94\xe2\x80\x94 em dashes",
  };
  for (const char* t : clean)
    EXPECT_TRUE(FindDegenerateText(t).empty()) << t << ": " << JoinFindings(FindDegenerateText(t));
  EXPECT_TRUE(FindDegenerate(ParseChatReply(200, ReplyFile("sglang_no_thinking.json"))).empty());
  ChatResult tool_only = ParseChatReply(200, ReplyFile("tool_call_sglang.json"));
  EXPECT_TRUE(FindDegenerate(tool_only).empty()) << JoinFindings(FindDegenerate(tool_only));
}

}  // namespace
}  // namespace tern::check
