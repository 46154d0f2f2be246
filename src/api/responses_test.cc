// Response bodies, SSE chunks and error bodies, byte for byte as SGLang's
// pydantic/msgspec models serialize them (field order from protocol.py and
// sse_utils.py, compact separators).
#include <gtest/gtest.h>

#include "api/chat_output.h"
#include "api/error_json.h"
#include "api/responses.h"

namespace tern::api {
namespace {

ResponseMeta Meta(std::string id = "chatcmpl-1") {
  ResponseMeta m;
  m.id = std::move(id);
  m.created = 1700000000;
  m.model = "qwen3";
  return m;
}

TEST(Responses, Usage) {
  Usage u;
  u.prompt_tokens = 10;
  u.completion_tokens = 5;
  u.reasoning_tokens = 2;
  EXPECT_EQ(ToJsonText(UsageJson(u)),
            R"({"prompt_tokens":10,"total_tokens":15,"completion_tokens":5,"prompt_tokens_details":null,)"
            R"("reasoning_tokens":2,"completion_tokens_details":{"reasoning_tokens":2}})");
  u.cached_tokens = 0;  // --enable-cache-report, nothing cached: still null
  EXPECT_NE(ToJsonText(UsageJson(u)).find(R"("prompt_tokens_details":null)"), std::string::npos);
  u.cached_tokens = 8;
  EXPECT_NE(ToJsonText(UsageJson(u)).find(R"("prompt_tokens_details":{"cached_tokens":8})"), std::string::npos);
}

TEST(Responses, ChatCompletion) {
  ChatChoice c;
  c.content = "The answer is 4.";
  c.reasoning = "2+2=4";
  c.finish = FinishReason::StopToken(151645);
  Usage u;
  u.prompt_tokens = 12;
  u.completion_tokens = 9;
  u.reasoning_tokens = 4;
  EXPECT_EQ(ToJsonText(ChatCompletionJson(Meta(), {c}, u)),
            R"({"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"qwen3",)"
            R"("choices":[{"index":0,"message":{"role":"assistant","content":"The answer is 4.",)"
            R"("reasoning_content":"2+2=4","tool_calls":null,"reasoning":"2+2=4"},"logprobs":null,)"
            R"("finish_reason":"stop","matched_stop":151645}],)"
            R"("usage":{"prompt_tokens":12,"total_tokens":21,"completion_tokens":9,"prompt_tokens_details":null,)"
            R"("reasoning_tokens":4,"completion_tokens_details":{"reasoning_tokens":4}},)"
            R"("metadata":{"weight_version":"default"}})");

  // Empty content stays "", no reasoning is null; tool calls turn "stop" into
  // "tool_calls" and clear matched_stop; the alias can be turned off.
  ChatChoice t;
  t.tool_calls.push_back({"call_abc", "get_weather", R"({"city": "Paris"})"});
  t.finish = FinishReason::StopToken(151645);
  ResponseMeta m = Meta();
  m.reasoning_alias = false;
  EXPECT_EQ(ToJsonText(ChatCompletionJson(m, {t}, Usage{})["choices"][0]),
            R"({"index":0,"message":{"role":"assistant","content":"","reasoning_content":null,)"
            R"("tool_calls":[{"id":"call_abc","index":0,"type":"function","function":{"name":"get_weather",)"
            R"("arguments":"{\"city\": \"Paris\"}"}}]},"logprobs":null,"finish_reason":"tool_calls","matched_stop":null})");

  ChatChoice l;
  l.finish = FinishReason::Length(16);
  l.logprobs = std::vector<TokenLogprob>{{9707, "Hi", -0.25f, {{9707, "Hi", -0.25f}, {13048, "Hello", -1.5f}}}};
  const Json choice = ChatCompletionJson(Meta(), {l}, Usage{})["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "length");
  EXPECT_TRUE(choice["matched_stop"].is_null());
  EXPECT_EQ(ToJsonText(choice["logprobs"]),
            R"({"content":[{"token":"Hi","bytes":[72,105],"logprob":-0.25,"top_logprobs":[)"
            R"({"token":"Hi","bytes":[72,105],"logprob":-0.25},{"token":"Hello","bytes":[72,101,108,108,111],"logprob":-1.5}]}]})");
  EXPECT_FALSE(choice.contains("prompt_token_ids"));

  // return_prompt_token_ids: after matched_stop, only when asked (SGLang's serializer).
  l.prompt_token_ids = std::vector<int32_t>{151644, 872};
  EXPECT_EQ(ToJsonText(ChatCompletionJson(Meta(), {l}, Usage{})["choices"][0]["prompt_token_ids"]), "[151644,872]");
}

TEST(Responses, ChatStreamChunks) {
  ChatStreamEncoder enc(Meta());
  const std::string head = R"(data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"qwen3","choices":[{"index":0,)";
  const std::string tail = R"(,"logprobs":null,"finish_reason":null,"matched_stop":null}]})"
                           "\n\n";
  EXPECT_EQ(enc.Role(0), head + R"("delta":{"role":"assistant","content":""})" + tail);
  EXPECT_EQ(enc.Reasoning(0, "Let me think"), head + R"("delta":{"reasoning_content":"Let me think","reasoning":"Let me think"})" + tail);
  EXPECT_EQ(enc.Content(0, "Hi \"there\"\n"), head + R"("delta":{"content":"Hi \"there\"\n"})" + tail);
  ToolCallDelta first;
  first.index = 0;
  first.id = "call_1";
  first.name = "get_weather";
  EXPECT_EQ(enc.ToolCall(0, first),
            head + R"("delta":{"tool_calls":[{"id":"call_1","index":0,"type":"function","function":{"name":"get_weather","arguments":""}}]})" + tail);
  ToolCallDelta piece;
  piece.index = 0;
  piece.arguments = R"({"city": )";
  EXPECT_EQ(enc.ToolCall(0, piece), head + R"("delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\": "}}]})" + tail);
  // Tool calls were streamed: stop becomes tool_calls; matched_stop is kept.
  EXPECT_EQ(enc.Finish(0, FinishReason::StopToken(151645)),
            head + R"("delta":{},"logprobs":null,"finish_reason":"tool_calls","matched_stop":151645}]})" "\n\n");
  // Another choice without tool calls keeps "stop"; a stop string is matched.
  EXPECT_EQ(enc.Finish(1, FinishReason::StopString("END")).find(R"("finish_reason":"stop","matched_stop":"END")") != std::string::npos, true);
  Usage u;
  u.prompt_tokens = 3;
  u.completion_tokens = 2;
  EXPECT_EQ(enc.UsageChunk(u),
            R"(data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"qwen3","choices":[],)"
            R"("usage":{"prompt_tokens":3,"total_tokens":5,"completion_tokens":2,"prompt_tokens_details":null,"reasoning_tokens":0,"completion_tokens_details":{"reasoning_tokens":0}}})"
            "\n\n");
  // continuous_usage_stats: usage rides on the delta chunk.
  EXPECT_NE(enc.Content(0, "x", &u).find(R"("matched_stop":null}],"usage":{"prompt_tokens":3)"), std::string::npos);
  EXPECT_EQ(kSseDone, "data: [DONE]\n\n");
}

TEST(Responses, ChatOutputPipelineStreamsLikeSGLang) {
  ChatParseConfig config;
  ReasoningConfig r;
  r.kind = ReasoningParserKind::kQwen3;
  r.force_reasoning = true;
  config.reasoning = r;
  config.tool_parser = ToolParserKind::kHermes;
  ToolSpec tool;
  tool.name = "get_weather";
  config.tools = {tool};
  int n = 0;
  ChatOutputParser parser(config, [&n] { return "call_" + std::to_string(n++); });
  ChatStreamEncoder enc(Meta());
  std::string sse = enc.Role(0);
  for (const char* piece : {"Need weather.", "\n</think>\n\nChecking.", "\n<tool_call>\n{\"name\": \"get_weather\", ",
                            "\"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>"})
    sse += EncodeChatDelta(enc, 0, parser.Push(piece));
  sse += EncodeChatDelta(enc, 0, parser.Finish());
  sse += enc.Finish(0, FinishReason::StopToken(151645));
  EXPECT_TRUE(parser.has_tool_calls());
  const std::string h = R"(data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"qwen3","choices":[{"index":0,"delta":)";
  const std::string t = R"(,"logprobs":null,"finish_reason":null,"matched_stop":null}]})"
                        "\n\n";
  EXPECT_EQ(sse, h + R"({"role":"assistant","content":""})" + t +
                     h + R"({"reasoning_content":"Need weather.","reasoning":"Need weather."})" + t +
                     h + R"({"reasoning_content":"\n","reasoning":"\n"})" + t +
                     h + R"({"content":"\n\nChecking."})" + t +
                     h + R"({"content":"\n"})" + t +
                     h + R"({"tool_calls":[{"id":"call_0","index":0,"type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Oslo\"}"}}]})" + t +
                     h + R"({},"logprobs":null,"finish_reason":"tool_calls","matched_stop":151645}]})" "\n\n");

  // The same output, not streamed: content trimmed around the call.
  int m = 0;
  const ChatChoice c = ParseChatOutput(
      config, "Need weather.\n</think>\n\nChecking.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>",
      FinishReason::StopToken(151645), [&m] { return "call_" + std::to_string(m++); });
  EXPECT_EQ(c.reasoning, "Need weather.\n");
  EXPECT_EQ(c.content, "Checking.");
  ASSERT_EQ(c.tool_calls.size(), 1u);
  EXPECT_EQ(c.tool_calls[0].arguments, R"({"city": "Oslo"})");
}

TEST(Responses, ChatParseConfigFromRequest) {
  const auto req = ParseChatRequest(Json::parse(R"({"messages": [{"role": "user", "content": "x"}],
      "tools": [{"function": {"name": "f"}}], "stream_reasoning": false,
      "chat_template_kwargs": {"force_nonempty_content": true}})"));
  ASSERT_TRUE(req.ok());
  ServerParsers server{ReasoningParserKind::kQwen3, ToolParserKind::kQwen3Coder};
  ChatParseConfig c = MakeChatParseConfig(*req, server, "<|im_start|>assistant\n<think>\n");
  ASSERT_TRUE(c.reasoning);
  EXPECT_TRUE(c.reasoning->force_reasoning);
  EXPECT_FALSE(c.reasoning->stream_reasoning);
  EXPECT_TRUE(c.reasoning->force_nonempty_content);
  EXPECT_EQ(c.tool_parser, ToolParserKind::kQwen3Coder);
  c = MakeChatParseConfig(*req, server, "<|im_start|>assistant\n");
  EXPECT_FALSE(c.reasoning->force_reasoning);
  c = MakeChatParseConfig(*req, ServerParsers{}, "");
  EXPECT_FALSE(c.reasoning || c.tool_parser);
}

// The tags the server keeps for the parsers even when they are special tokens
// (and skip_special_tokens is on): exactly those the configured parsers consume.
TEST(Responses, ChatParserTags) {
  const auto req = ParseChatRequest(Json::parse(R"({"messages": [{"role": "user", "content": "x"}],
      "tools": [{"function": {"name": "f"}}]})"));
  ASSERT_TRUE(req.ok());
  using Tags = std::vector<std::string>;
  EXPECT_EQ(ChatParserTags(MakeChatParseConfig(*req, ServerParsers{}, "")), Tags{});
  EXPECT_EQ(ChatParserTags(MakeChatParseConfig(*req, {ReasoningParserKind::kQwen3, std::nullopt}, "")),
            (Tags{"<think>", "</think>"}));
  EXPECT_EQ(ChatParserTags(MakeChatParseConfig(*req, {ReasoningParserKind::kQwen3, ToolParserKind::kQwen25}, "")),
            (Tags{"<think>", "</think>", "<tool_call>", "</tool_call>"}));
  const auto none = ParseChatRequest(Json::parse(R"({"messages": [{"role": "user", "content": "x"}],
      "tools": [{"function": {"name": "f"}}], "tool_choice": "none"})"));
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(ChatParserTags(MakeChatParseConfig(*none, {std::nullopt, ToolParserKind::kHermes}, "")), Tags{});
}

// tool_choice required / named: the forced start of a call, and the parsed
// reply when that start is pushed before a generated continuation.
TEST(Responses, ForceToolCall) {
  const std::string tools = R"("tools": [{"type": "function", "function": {"name": "get_weather",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}},
      {"type": "function", "function": {"name": "get_time"}}])";
  auto chat = [&](const std::string& extra) {
    auto r = ParseChatRequest(Json::parse(R"({"messages": [{"role": "user", "content": "x"}], )" + tools + extra + "}"));
    EXPECT_TRUE(r.ok());
    return *r;
  };
  auto forced = [](const ChatRequest& r, const ServerParsers& p, std::string_view prompt) {
    const ForcedToolCall f = ForceToolCall(r, p, prompt);
    return f.prompt_suffix + "|" + f.reply_prefix;
  };
  const ServerParsers hermes{std::nullopt, ToolParserKind::kHermes};
  const ServerParsers coder{ReasoningParserKind::kQwen3, ToolParserKind::kQwen3Coder};
  const std::string plain = "<|im_start|>assistant\n", thinking = "<|im_start|>assistant\n<think>\n";
  const ChatRequest named = chat(R"(, "tool_choice": {"type": "function", "function": {"name": "get_weather"}})");
  const ChatRequest required = chat(R"(, "tool_choice": "required")");
  EXPECT_EQ(forced(named, hermes, plain), "|<tool_call>\n{\"name\": \"get_weather\", \"arguments\": ");
  EXPECT_EQ(forced(required, hermes, plain), "|<tool_call>\n{\"name\": \"");
  EXPECT_EQ(forced(named, coder, plain), "|<tool_call>\n<function=get_weather>\n");
  // Inside <think> (Qwen3.5): the block is closed in the prompt, as with thinking off.
  EXPECT_EQ(forced(required, coder, thinking), "\n</think>\n\n|<tool_call>\n<function=");
  EXPECT_EQ(forced(named, coder, thinking), "\n</think>\n\n|<tool_call>\n<function=get_weather>\n");
  // Nothing forced for auto/none, without a parser, or with input_ids.
  EXPECT_EQ(forced(chat(""), hermes, plain), "|");
  EXPECT_EQ(forced(chat(R"(, "tool_choice": "none")"), coder, thinking), "|");
  EXPECT_EQ(forced(named, ServerParsers{}, plain), "|");
  EXPECT_EQ(forced(chat(R"(, "tool_choice": "required", "input_ids": [1, 2])"), hermes, plain), "|");

  // The reply of a forced named call: the prefix plus what the model wrote after it.
  int m = 0;
  auto ids = [&m] { return "call_" + std::to_string(m++); };
  const ForcedToolCall named_hermes = ForceToolCall(named, hermes, plain);
  ChatChoice c = ParseChatOutput(MakeChatParseConfig(named, hermes, plain),
                                 named_hermes.reply_prefix + "{\"city\": \"Oslo\"}}\n</tool_call>",
                                 FinishReason::StopToken(151645), ids);
  ASSERT_EQ(c.tool_calls.size(), 1u);
  EXPECT_EQ(c.tool_calls[0].name, "get_weather");
  EXPECT_EQ(c.tool_calls[0].arguments, R"({"city": "Oslo"})");
  EXPECT_EQ(c.content, "");
  // Qwen3-Coder with the prompt inside <think>: the parse config follows the
  // prompt with the block closed, so the reply has no reasoning at all.
  const ForcedToolCall coder_required = ForceToolCall(required, coder, thinking);
  const ChatParseConfig coder_cfg = MakeChatParseConfig(required, coder, thinking + coder_required.prompt_suffix);
  ASSERT_TRUE(coder_cfg.reasoning);
  EXPECT_FALSE(coder_cfg.reasoning->force_reasoning);
  c = ParseChatOutput(coder_cfg, coder_required.reply_prefix + "get_time>\n</function>\n</tool_call>",
                      FinishReason::StopToken(151645), ids);
  ASSERT_EQ(c.tool_calls.size(), 1u);
  EXPECT_EQ(c.tool_calls[0].name, "get_time");
  EXPECT_EQ(c.tool_calls[0].arguments, "{}");
  EXPECT_EQ(c.reasoning, "");
  EXPECT_EQ(c.content, "");
  // Streaming: the prefix pushed first, then the generated pieces, gives the same call.
  ChatOutputParser stream(MakeChatParseConfig(named, hermes, plain), ids);
  ToolCallAccumulator acc;
  for (std::string_view piece : {std::string_view(named_hermes.reply_prefix),
                                 std::string_view("{\"ci"), std::string_view("ty\": \"Os"),
                                 std::string_view("lo\"}}\n</tool"), std::string_view("_call>")}) {
    ChatDelta d = stream.Push(piece);
    EXPECT_EQ(d.content, "");
    EXPECT_EQ(d.reasoning, "");
    acc.Add({"", d.tool_calls});
  }
  acc.Add({"", stream.Finish().tool_calls});
  ASSERT_EQ(acc.result().calls.size(), 1u);
  EXPECT_EQ(acc.result().calls[0].name, "get_weather");
  EXPECT_EQ(acc.result().calls[0].arguments, R"({"city": "Oslo"})");
}

// usage.reasoning_tokens: the generated tokens up to and including the one
// that ends reasoning (SGLang's count), whatever the reasoning text re-encodes to.
TEST(Responses, ReasoningTokenCounter) {
  auto req = ParseChatRequest(Json::parse(R"({"messages": [{"role": "user", "content": "x"}]})"));
  ASSERT_TRUE(req.ok());
  const ServerParsers qwen3{ReasoningParserKind::kQwen3, std::nullopt};
  auto count = [&](const ChatParseConfig& cfg, std::vector<std::string> tokens, std::string prefix = "") {
    ReasoningTokenCounter counter(cfg, prefix);
    for (const auto& t : tokens) counter.Add(t);
    return counter.count();
  };
  const ChatParseConfig forced = MakeChatParseConfig(*req, qwen3, "<|im_start|>assistant\n<think>\n");
  const ChatParseConfig open = MakeChatParseConfig(*req, qwen3, "<|im_start|>assistant\n");
  const ChatParseConfig off = MakeChatParseConfig(*req, qwen3, "<|im_start|>assistant\n<think>\n\n</think>\n\n");
  // Forced (Qwen3.5): all of it while </think> never comes, even bytes that
  // decode to replacement characters.
  EXPECT_EQ(count(forced, {"Hmm", "\xef\xbf\xbd", " so"}), 3);
  EXPECT_EQ(count(forced, {"Hmm", ".", "</think>", "\n\n", "Hi", "<|im_end|>"}), 3);
  // The tag split over tokens: the token that completes it is the last one.
  EXPECT_EQ(count(forced, {"ok", "</", "think", ">", "Hi"}), 4);
  // Qwen3.5 calling a tool without closing the block: reasoning ends at <tool_call>.
  EXPECT_EQ(count(forced, {"call", "<tool_call>", "\n<function=f>"}), 2);
  // Not forced: counted from the model's own <think>; none when it does not think.
  EXPECT_EQ(count(open, {"<think>", "\n", "a", "</think>", "\n\n", "b"}), 4);
  EXPECT_EQ(count(open, {"Hello", " there"}), 0);
  EXPECT_EQ(count(off, {"Hello", " there"}), 0);
  // A forced tool call that closed the block in the prompt: no reasoning.
  EXPECT_EQ(count(off, {"get_time", ">\n"}, "<tool_call>\n<function="), 0);
  // No reasoning parsing (no --reasoning-parser, or separate_reasoning false): 0.
  EXPECT_EQ(count(MakeChatParseConfig(*req, ServerParsers{}, "<think>\n"), {"a", "</think>"}), 0);
}

TEST(Responses, Completion) {
  CompletionChoice c;
  c.text = " there";
  c.finish = FinishReason::Length(2);
  c.logprobs = std::vector<TokenLogprob>{{1052, " there", -0.5f, {{1052, " there", -0.5f}}}, {11, ",", -1.0f, {}}};
  Usage u;
  u.prompt_tokens = 1;
  u.completion_tokens = 2;
  EXPECT_EQ(ToJsonText(CompletionJson(Meta("cmpl-9"), {c}, u)),
            R"({"id":"cmpl-9","object":"text_completion","created":1700000000,"model":"qwen3","choices":[{"index":0,)"
            R"("text":" there","logprobs":{"text_offset":[-1,-1],"token_logprobs":[-0.5,-1.0],"tokens":[" there",","],)"
            R"("top_logprobs":[{" there":-0.5}]},"finish_reason":"length","matched_stop":null}],)"
            R"("usage":{"prompt_tokens":1,"total_tokens":3,"completion_tokens":2,"prompt_tokens_details":null,)"
            R"("reasoning_tokens":0,"completion_tokens_details":{"reasoning_tokens":0}},"metadata":{"weight_version":"default"}})");
  CompletionStreamEncoder enc(Meta("cmpl-9"));
  EXPECT_EQ(enc.Chunk(0, "Hel"),
            R"(data: {"id":"cmpl-9","object":"text_completion","created":1700000000,"model":"qwen3","choices":[{"index":0,)"
            R"("text":"Hel","logprobs":null,"finish_reason":null,"matched_stop":null}],"usage":null})"
            "\n\n");
  const FinishReason stop = FinishReason::StopToken(151643);
  EXPECT_NE(enc.Chunk(0, "", &stop).find(R"("finish_reason":"stop","matched_stop":151643)"), std::string::npos);
  EXPECT_EQ(enc.UsageChunk(u),
            R"(data: {"id":"cmpl-9","object":"text_completion","created":1700000000,"model":"qwen3","choices":[],)"
            R"("usage":{"prompt_tokens":1,"total_tokens":3,"completion_tokens":2,"reasoning_tokens":0,"completion_tokens_details":{"reasoning_tokens":0}}})"
            "\n\n");
}

TEST(Responses, Generate) {
  GenerateOutput o;
  o.id = "6f3c";
  o.text = " Paris.";
  o.output_ids = {12095, 13};
  o.finish = FinishReason::StopToken(151643);
  o.prompt_tokens = 6;
  o.completion_tokens = 2;
  o.e2e_latency = 0.5;
  EXPECT_EQ(ToJsonText(GenerateJson(o)),
            R"({"text":" Paris.","output_ids":[12095,13],"meta_info":{"id":"6f3c","finish_reason":{"type":"stop",)"
            R"("matched":151643},"prompt_tokens":6,"weight_version":"default","total_retractions":0,)"
            R"("completion_tokens":2,"cached_tokens":0,"e2e_latency":0.5}})");
  o.finish.reset();
  o.e2e_latency.reset();
  o.logprobs = std::vector<TokenLogprob>{{12095, " Paris", -0.125f, {}}};
  EXPECT_EQ(ToJsonText(GenerateJson(o)["meta_info"]),
            R"({"id":"6f3c","finish_reason":null,"prompt_tokens":6,"weight_version":"default","total_retractions":0,)"
            R"("completion_tokens":2,"cached_tokens":0,"input_token_logprobs":[],"output_token_logprobs":[[-0.125,12095,null]]})");
  EXPECT_EQ(ToJsonText(FinishReasonJson(FinishReason::Length(128))), R"({"type":"length","length":128})");
  EXPECT_EQ(ToJsonText(FinishReasonJson(FinishReason::Abort("client gone"))), R"({"type":"abort","message":"client gone"})");
  EXPECT_EQ(SseEvent(GenerateJson(o)).substr(0, 15), "data: {\"text\":\"");
}

TEST(Responses, ErrorBodies) {
  const ApiError e = ApiError::BadRequest("Messages cannot be empty.");
  // SGLang's flat fields and OpenAI's error object in one body (issue 24).
  EXPECT_EQ(ErrorBody(e), R"({"object":"error","message":"Messages cannot be empty.","type":"BadRequestError","param":null,"code":400,)"
                          R"("error":{"message":"Messages cannot be empty.","type":"BadRequestError","param":null,"code":400}})");
  EXPECT_EQ(NestedErrorBody(e), R"({"error":{"message":"Messages cannot be empty.","type":"BadRequestError","param":null,"code":400}})");
  EXPECT_EQ(StreamErrorEvent(e),
            "data: " R"({"error":{"object":"error","message":"Messages cannot be empty.","type":"BadRequestError","param":null,"code":400}})" "\n\n");
  EXPECT_EQ(StreamAbortEvent(503, kQueueFullMessage),
            "data: " R"({"error":{"object":"error","message":"The request queue is full.","type":"SERVICE_UNAVAILABLE","param":null,"code":503}})" "\n\n");
  EXPECT_EQ(ErrorBody(ApiError::Internal("boom")),
            R"({"object":"error","message":"Internal server error: boom","type":"InternalServerError","param":null,"code":500,)"
            R"("error":{"message":"Internal server error: boom","type":"InternalServerError","param":null,"code":500}})");
  EXPECT_EQ(ErrorBody(ApiError::Http(503, "The request queue is full.")),
            R"({"object":"error","message":"The request queue is full.","type":"503","param":null,"code":503,)"
            R"("error":{"message":"The request queue is full.","type":"503","param":null,"code":503}})");
  EXPECT_EQ(GenerateStreamErrorEvent("bad"), "data: {\"error\":{\"message\":\"bad\"}}\n\n");
  EXPECT_EQ(UnauthorizedBody(), R"({"object":"error","message":"Unauthorized","type":"Unauthorized","param":null,"code":401,)"
                                 R"("error":{"message":"Unauthorized","type":"Unauthorized","param":null,"code":401}})");
  EXPECT_EQ(GenerateErrorBody(ApiError::BadRequest("bad")),
            R"({"error":{"message":"bad","type":"BadRequestError","param":null,"code":400}})");
  EXPECT_EQ(ModelNotFoundBody("gpt-9"),
            R"({"object":"error","message":"The model 'gpt-9' does not exist","type":"invalid_request_error","param":"model",)"
            R"("code":404,"error":{"message":"The model 'gpt-9' does not exist","type":"invalid_request_error","param":"model",)"
            R"("code":"model_not_found"}})");
  EXPECT_EQ(HttpStatusName(408), "REQUEST_TIMEOUT");
}

TEST(Responses, ModelsAndIds) {
  EXPECT_EQ(ToJsonText(ModelListJson("Qwen/Qwen3-8B", 1700000000, 40960)),
            R"({"object":"list","data":[{"id":"Qwen/Qwen3-8B","object":"model","created":1700000000,"owned_by":"sglang",)"
            R"("root":"Qwen/Qwen3-8B","parent":null,"max_model_len":40960}]})");
  const std::string id = NewRequestId("chatcmpl-");
  EXPECT_EQ(id.size(), 9u + 32u);
  EXPECT_EQ(id.find_first_not_of("0123456789abcdef", 9), std::string::npos);
  EXPECT_NE(id, NewRequestId("chatcmpl-"));
}

}  // namespace
}  // namespace tern::api
