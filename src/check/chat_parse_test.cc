// Reading replies of every dialect (testdata/replies) and assembling streams.
#include <gtest/gtest.h>

#include <cmath>

#include "check/chat.h"
#include "check/sse.h"
#include "check/test_util.h"

namespace tern::check {
namespace {

using testing::ReplyFile;

ChatResult Parse(const std::string& file, int status = 200) { return ParseChatReply(status, ReplyFile(file)); }

ChatResult Stream(const std::string& body, size_t piece, std::string_view transport_error = "") {
  SseParser p;
  StreamAssembler a;
  std::vector<SseEvent> ev;
  double t = 0;
  for (size_t i = 0; i < body.size(); i += piece) {
    ev.clear();
    p.Feed(std::string_view(body).substr(i, piece), &ev);
    for (const auto& e : ev) a.OnEvent(e.data, t += 0.01);
  }
  return a.Finish(200, t + 0.01, transport_error, p.partial());
}

TEST(ParseChatReply, SglangThinking) {
  ChatResult r = Parse("sglang_thinking.json");
  ASSERT_TRUE(r.ok()) << r.failure;
  EXPECT_EQ(r.content, "17 × 19 = **323**");
  EXPECT_EQ(r.reasoning, "Okay, 17 times 19. 17 times 20 is 340, minus 17 is 323.");
  EXPECT_EQ(r.reasoning_field, "reasoning_content");
  EXPECT_EQ(r.finish_reason, "stop");
  EXPECT_EQ(r.prompt_tokens, 21);
  EXPECT_EQ(r.completion_tokens, 74);
  EXPECT_FALSE(r.has_logprobs);
}

TEST(ParseChatReply, SglangNoThinkingWithLogprobs) {
  ChatResult r = Parse("sglang_no_thinking.json");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.content, "323");
  EXPECT_FALSE(r.reasoning.has_value());  // "reasoning_content": null
  ASSERT_TRUE(r.has_logprobs);
  ASSERT_EQ(r.logprobs.size(), 3u);
  EXPECT_EQ(r.tokens[1], "2");
  EXPECT_DOUBLE_EQ(r.logprobs[0], -0.0012);
}

TEST(ParseChatReply, VllmReasoningField) {
  ChatResult r = Parse("vllm_reasoning.json");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.reasoning_field, "reasoning");
  EXPECT_EQ(r.reasoning, "17*19: 17*20=340, 340-17=323.");
  EXPECT_EQ(r.content, "\n\nThe answer is 323.");
  EXPECT_TRUE(r.tool_calls.empty());
}

TEST(ParseChatReply, VllmContentNull) {
  ChatResult r = Parse("vllm_content_null.json");
  ASSERT_TRUE(r.ok());  // a null content is a reply, to be judged, not a crash
  EXPECT_FALSE(r.content.has_value());
  EXPECT_EQ(r.finish_reason, "length");
  EXPECT_EQ(r.ContentOr("<none>"), "<none>");
}

TEST(ParseChatReply, LlamaCpp) {
  ChatResult r = Parse("llamacpp_thinking.json");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.content, "323");
  EXPECT_EQ(r.reasoning_field, "reasoning_content");
  EXPECT_EQ(r.completion_tokens, 30);
}

TEST(ParseChatReply, NanLogprobsAreReadNotRejected) {
  ChatResult r = Parse("sglang_nan_logprobs.json");
  ASSERT_TRUE(r.ok()) << r.failure;
  EXPECT_EQ(r.nonfinite_json, 2);
  ASSERT_EQ(r.logprobs.size(), 2u);
  EXPECT_TRUE(std::isnan(r.logprobs[0]));
  EXPECT_TRUE(std::isnan(r.logprobs[1]));
  EXPECT_EQ(r.content, "OK");
}

TEST(ParseChatReply, ToolCall) {
  ChatResult r = Parse("tool_call_sglang.json");
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r.tool_calls.size(), 1u);
  EXPECT_EQ(r.tool_calls[0].id, "call_0a1b2c3d4e5f60718293a4b5");
  EXPECT_EQ(r.tool_calls[0].name, "get_weather");
  EXPECT_EQ(r.tool_calls[0].arguments, R"({"location": "Paris", "unit": "celsius"})");
  EXPECT_EQ(r.finish_reason, "tool_calls");
}

TEST(ParseChatReply, ErrorsInEveryShape) {
  ChatResult r = Parse("error_sglang_flat.json", 400);
  EXPECT_FALSE(r.ok());
  ASSERT_TRUE(r.error.has_value());
  EXPECT_EQ(r.error->shape, "flat");
  EXPECT_EQ(r.error->type, "Bad Request");
  EXPECT_NE(r.failure.find("HTTP 400: [{'type': 'json_invalid'"), std::string::npos) << r.failure;

  r = Parse("error_vllm_nested.json", 400);
  ASSERT_TRUE(r.error.has_value());
  EXPECT_EQ(r.error->shape, "nested");
  EXPECT_EQ(r.error->type, "BadRequestError");
  EXPECT_EQ(r.error->message.substr(0, 19), "1 validation error ");

  r = Parse("error_unauthorized.json", 401);
  ASSERT_TRUE(r.error.has_value());
  EXPECT_EQ(r.error->shape, "string");
  EXPECT_EQ(r.failure, "HTTP 401: Unauthorized");

  EXPECT_EQ(ParseApiError(R"({"detail":"Not Found"})").shape, "detail");
  EXPECT_EQ(ParseApiError(R"({"error":{"code":503,"message":"Loading model","type":"unavailable_error"}})").message,
            "Loading model");
  EXPECT_EQ(ParseApiError("<html>bad gateway</html>").shape, "text");
  EXPECT_EQ(ParseApiError("  ").shape, "empty");
}

TEST(ParseChatReply, ShapeProblemsAreFailuresNotCrashes) {
  EXPECT_EQ(ParseChatReply(200, "not json").failure, "reply is not a JSON object: 'not json'");
  EXPECT_EQ(ParseChatReply(200, "[1,2]").failure.substr(0, 25), "reply is not a JSON objec");
  EXPECT_EQ(ParseChatReply(200, R"({"choices":[]})").failure, "reply has no choices");
  EXPECT_EQ(ParseChatReply(200, R"({"choices":[{"message":"hi"}]})").failure, "choices[0] has no message object");
  EXPECT_NE(ParseChatReply(200, R"({"error":{"message":"boom"}})").failure.find("boom"), std::string::npos);
  // Wrong types inside are ignored field by field.
  ChatResult r =
      ParseChatReply(200, R"({"choices":[{"message":{"content":5,"tool_calls":"x"},"finish_reason":7}],"usage":"x"})");
  EXPECT_TRUE(r.ok());
  EXPECT_FALSE(r.content.has_value());
  EXPECT_TRUE(r.tool_calls.empty());
}

TEST(StreamAssembler, SglangStreamWithUsageChunk) {
  const std::string body = ReplyFile("stream_sglang.txt");
  for (size_t piece : {1u, 5u, 64u, 100000u}) {
    ChatResult r = Stream(body, piece);
    ASSERT_TRUE(r.ok()) << r.failure;
    EXPECT_TRUE(r.done_seen);
    EXPECT_TRUE(r.stream_error.empty()) << r.stream_error;
    EXPECT_EQ(r.content, "323");
    EXPECT_EQ(r.reasoning, "17*20=340, minus 17");
    EXPECT_EQ(r.reasoning_field, "reasoning_content");
    EXPECT_EQ(r.finish_reason, "stop");
    EXPECT_TRUE(r.usage_seen);
    EXPECT_EQ(r.completion_tokens, 12);
    EXPECT_EQ(r.events, 8);
    EXPECT_EQ(r.content_chunks, 4);
    ASSERT_TRUE(r.ttft_s.has_value());
  }
}

TEST(StreamAssembler, VllmStreamWithoutUsageCrlf) {
  ChatResult r = Stream(ReplyFile("stream_vllm_no_usage.txt"), 3);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r.done_seen);
  EXPECT_FALSE(r.usage_seen);
  EXPECT_FALSE(r.completion_tokens.has_value());
  EXPECT_EQ(r.content, "Hello world");
  EXPECT_EQ(r.reasoning, "think");
  EXPECT_EQ(r.reasoning_field, "reasoning");
}

TEST(StreamAssembler, DroppedStreamIsReported) {
  ChatResult r = Stream(ReplyFile("stream_dropped.txt"), 16, "read failed (connection closed, reset or timed out)");
  EXPECT_TRUE(r.ok());  // the events that came are kept...
  EXPECT_EQ(r.content, "The sea");
  EXPECT_FALSE(r.done_seen);  // ...and the drop is named
  EXPECT_NE(r.stream_error.find("stream ended without [DONE] after 2 events (read failed"), std::string::npos)
      << r.stream_error;
  EXPECT_NE(r.stream_error.find("unfinished event"), std::string::npos);
}

TEST(StreamAssembler, ErrorChunkToolDeltasAndJunk) {
  StreamAssembler a;
  a.OnEvent(
      R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]}}]})",
      0.1);
  a.OnEvent(
      R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"location\":"}}]}}]})",
      0.2);
  a.OnEvent(R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":" \"Paris\"}"}}]}}]})",
            0.3);
  a.OnEvent(R"({"object":"error","message":"The request queue is full.","type":"SERVICE_UNAVAILABLE","code":503})",
            0.4);
  a.OnEvent("[DONE]", 0.5);
  ChatResult r = a.Finish(200, 0.5, "", "");
  ASSERT_EQ(r.tool_calls.size(), 1u);
  EXPECT_EQ(r.tool_calls[0].id, "call_1");
  EXPECT_EQ(r.tool_calls[0].arguments, R"({"location": "Paris"})");
  EXPECT_EQ(r.stream_error, "error chunk: The request queue is full.");
  EXPECT_DOUBLE_EQ(*r.ttft_s, 0.1);

  StreamAssembler b;
  b.OnEvent("garbage", 0.1);
  b.OnEvent("[DONE]", 0.2);
  ChatResult g = b.Finish(200, 0.2, "", "");
  EXPECT_NE(g.stream_error.find("event 1 is not JSON"), std::string::npos);

  StreamAssembler none;
  EXPECT_EQ(none.Finish(200, 0.1, "", "").failure, "stream carried no events");
}

}  // namespace
}  // namespace tern::check
