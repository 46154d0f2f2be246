// /v1/chat/completions request validation: every error path with SGLang's
// status, type and message, and the normalized request on success.
#include <gtest/gtest.h>

#include "api/chat_template_inputs.h"
#include "api/requests.h"

namespace tern::api {
namespace {

Json J(std::string_view text) { return Json::parse(text); }

ApiResult<ChatRequest> Chat(std::string_view body, ServerLimits limits = {}) {
  return ParseChatRequest(J(body), limits);
}

void ExpectError(const ApiResult<ChatRequest>& r, int status, std::string_view type, std::string_view message) {
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().status, status);
  EXPECT_EQ(r.error().type, type);
  EXPECT_EQ(r.error().message, message);
}

void ExpectBadRequest(std::string_view body, std::string_view message, ServerLimits limits = {}) {
  ExpectError(Chat(body, limits), 400, "BadRequestError", message);
}

void ExpectValidation(std::string_view body, std::string_view message) {
  ExpectError(Chat(body), 400, "Bad Request", message);
}

constexpr std::string_view kHi = R"("messages": [{"role": "user", "content": "hi"}])";

std::string Body(std::string_view extra) {
  std::string b = "{" + std::string(kHi);
  if (!extra.empty()) b += ", " + std::string(extra);
  return b + "}";
}

TEST(ChatRequest, MinimalRequestDefaults) {
  const auto r = Chat(Body(""));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->model, "default");
  EXPECT_EQ(r->tool_choice.mode, ToolChoiceMode::kNone);
  EXPECT_FALSE(r->stream);
  EXPECT_FALSE(r->sampling.max_new_tokens);
  EXPECT_FALSE(r->sampling.temperature);
  EXPECT_TRUE(r->sampling.skip_special_tokens);
  EXPECT_TRUE(r->separate_reasoning);
  EXPECT_TRUE(r->stream_reasoning);
  EXPECT_EQ(r->sampling.n, 1);
  EXPECT_EQ(r->messages, J(R"([{"role": "user", "content": "hi"}])"));
}

// Errors are listed up to 100, then one entry says more follow: a body of
// millions of bad elements would otherwise be answered with gigabytes.
TEST(ChatRequest, AtMost100ErrorsAreListed) {
  std::string ids = "[";
  for (int i = 0; i < 5000; ++i) ids += i ? ",{}" : "{}";
  const auto r = Chat(Body("\"stop_token_ids\": " + ids + "]"));
  ASSERT_FALSE(r.ok());
  const std::string& m = r.error().message;
  size_t listed = 0;
  for (size_t at = m.find("'type': "); at != std::string::npos; at = m.find("'type': ", at + 1)) ++listed;
  EXPECT_EQ(listed, 101u) << m.substr(0, 300);
  EXPECT_NE(m.find("('body', 'stop_token_ids', 99)"), std::string::npos);
  EXPECT_EQ(m.find("('body', 'stop_token_ids', 100)"), std::string::npos);
  EXPECT_TRUE(m.ends_with("{'type': 'too_many_errors', 'loc': (), 'msg': 'more errors follow; the first 100 are listed'}]"))
      << m.substr(m.size() - 200);
}

// model and rid are repeated in every streamed chunk of every choice: bounded.
TEST(ChatRequest, ModelAndRidAreBounded) {
  const std::string model(4096, 'm'), rid(1024, 'r');
  const auto ok = Chat(Body("\"model\": \"" + model + "\", \"rid\": \"" + rid + "\""));
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(ok->model, model);
  EXPECT_EQ(ok->rid, rid);
  ExpectValidation(Body("\"model\": \"" + model + "m\", \"rid\": [\"" + rid + "r\"]"),
                   "[{'type': 'string_too_long', 'loc': ('body', 'model'), 'msg': 'String should have at most 4096 "
                   "characters'}, {'type': 'string_too_long', 'loc': ('body', 'rid'), 'msg': 'String should have at "
                   "most 1024 characters'}]");
}

TEST(ChatRequest, BodyAndFieldTypeErrorsAreListedLikePydantic) {
  ExpectError(ParseChatRequest(J("[1]")), 400, "Bad Request",
              "[{'type': 'model_attributes_type', 'loc': ('body',), 'msg': 'Input should be a valid "
              "dictionary or object to extract fields from'}]");
  ExpectValidation("{}", "[{'type': 'missing', 'loc': ('body', 'messages'), 'msg': 'Field required'}]");
  ExpectValidation(R"({"messages": "hi"})",
                   "[{'type': 'list_type', 'loc': ('body', 'messages'), 'msg': 'Input should be a valid list'}]");
  ExpectValidation(Body(R"("temperature": "hot", "max_tokens": 1.5, "stream": "maybe")"),
                   "[{'type': 'float_parsing', 'loc': ('body', 'temperature'), 'msg': 'Input should be a "
                   "valid number, unable to parse string as a number'}, {'type': 'int_from_float', 'loc': "
                   "('body', 'max_tokens'), 'msg': 'Input should be a valid integer, got a number with a "
                   "fractional part'}, {'type': 'bool_parsing', 'loc': ('body', 'stream'), 'msg': 'Input "
                   "should be a valid boolean, unable to interpret input'}]");
  ExpectValidation(Body(R"("stop": 5)"),
                   "[{'type': 'string_type', 'loc': ('body', 'stop', 'str'), 'msg': 'Input should be a valid "
                   "string'}, {'type': 'list_type', 'loc': ('body', 'stop', 'list[str]'), 'msg': 'Input "
                   "should be a valid list'}]");
  ExpectValidation(Body(R"("stop_token_ids": [1, "x"])"),
                   "[{'type': 'int_parsing', 'loc': ('body', 'stop_token_ids', 1), 'msg': 'Input should be a "
                   "valid integer, unable to parse string as an integer'}]");
  ExpectValidation(Body(R"("model": 7)"),
                   "[{'type': 'string_type', 'loc': ('body', 'model'), 'msg': 'Input should be a valid string'}]");
  ExpectValidation(Body(R"("chat_template_kwargs": [])"),
                   "[{'type': 'dict_type', 'loc': ('body', 'chat_template_kwargs'), 'msg': 'Input should be a "
                   "valid dictionary'}]");
}

TEST(ChatRequest, LaxScalarConversions) {
  const auto r = Chat(Body(R"("temperature": "0.5", "max_tokens": 8.0, "stream": "yes", "top_k": "3",
                              "logprobs": 1, "presence_penalty": null, "seed": null)"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->sampling.temperature->value, 0.5);
  EXPECT_EQ(r->sampling.max_new_tokens, 8);
  EXPECT_TRUE(r->stream);
  EXPECT_EQ(r->sampling.top_k->value, 3);
  EXPECT_TRUE(r->logprobs);
  EXPECT_EQ(r->sampling.presence_penalty.value, 0);
}

TEST(ChatRequest, MessageShapeErrors) {
  ExpectValidation(R"({"messages": [5]})",
                   "[{'type': 'model_attributes_type', 'loc': ('body', 'messages', 0), 'msg': 'Input should be "
                   "a valid dictionary or object to extract fields from'}]");
  ExpectValidation(R"({"messages": [{"content": "x"}]})",
                   "[{'type': 'missing', 'loc': ('body', 'messages', 0, 'role'), 'msg': 'Field required'}]");
  ExpectValidation(R"({"messages": [{"role": 1, "content": "x"}]})",
                   "[{'type': 'value_error', 'loc': ('body', 'messages', 0, 'role'), 'msg': \"Value error, "
                   "'role' must be a string\"}]");
  ExpectValidation(R"({"messages": [{"role": "wizard", "content": "x"}]})",
                   "[{'type': 'value_error', 'loc': ('body', 'messages', 0, 'role'), 'msg': \"Value error, "
                   "'role' must be one of 'system', 'assistant', 'tool', 'function', 'developer', "
                   "'latest_reminder' (case-insensitive).\"}]");
  ExpectValidation(R"({"messages": [{"role": "user", "content": 5}]})",
                   "[{'type': 'string_type', 'loc': ('body', 'messages', 0, 'content'), 'msg': 'Input should be "
                   "a valid string'}]");
  ExpectValidation(R"({"messages": [{"role": "user", "content": [{"type": "text"}]}]})",
                   "[{'type': 'missing', 'loc': ('body', 'messages', 0, 'content', 0, 'text'), 'msg': 'Field "
                   "required'}]");
  ExpectValidation(R"({"messages": [{"role": "user", "content": [{"type": "thinking", "thinking": "x"}]}]})",
                   "[{'type': 'value_error', 'loc': ('body', 'messages', 0, 'content'), 'msg': 'Value error, "
                   "thinking content parts are only valid in assistant messages'}]");
  ExpectValidation(R"({"messages": [{"role": "user", "content": [{"type": "hologram"}]}]})",
                   "[{'type': 'literal_error', 'loc': ('body', 'messages', 0, 'content', 0, 'type'), 'msg': "
                   "\"Input should be 'text', 'thinking', 'reasoning', 'image_url', 'video_url', 'audio_url' "
                   "or 'tool_reference'\"}]");
  ExpectValidation(R"({"messages": [{"role": "assistant", "tool_calls": [{"id": "c"}]}]})",
                   "[{'type': 'missing', 'loc': ('body', 'messages', 0, 'tool_calls', 0, 'function'), 'msg': "
                   "'Field required'}]");
}

TEST(ChatRequest, MessagesAreNormalized) {
  const auto r = Chat(R"({"messages": [
      {"role": "System", "content": "be brief"},
      {"role": "user", "content": [{"type": "text", "text": "a"}, "b"]},
      {"role": "assistant", "content": null, "reasoning": "thought",
       "tool_calls": [{"id": "call_1", "type": "function",
                       "function": {"name": "f", "arguments": "{\"x\": 1, \"a\": [2]}"}}]},
      {"role": "tool", "tool_call_id": "call_1", "content": [{"type": "text", "text": "r1"}, {"type": "text", "text": "r2"}]}]})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->messages[0]["role"], "system");
  EXPECT_EQ(r->messages[1]["content"], J(R"([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}])"));
  EXPECT_EQ(r->messages[2]["reasoning_content"], "thought");
  // Arguments parsed into an object, key order kept.
  EXPECT_EQ(r->messages[2]["tool_calls"][0]["function"]["arguments"].dump(), R"({"x":1,"a":[2]})");

  const ChatTemplateInputs in = PrepareChatTemplateInputs(*r, ContentFormat::kString);
  EXPECT_EQ(in.messages[1]["content"], "a b");  // SGLang joins text parts with " "
  EXPECT_EQ(in.messages[2]["content"], "");    // null content -> ""
  EXPECT_EQ(in.messages[3]["content"], "r1 r2");
  EXPECT_EQ(in.messages[2]["reasoning_content"], "thought");
  EXPECT_EQ(in.messages[2].begin().key(), "role");
  const ChatTemplateInputs open = PrepareChatTemplateInputs(*r, ContentFormat::kOpenAi);
  EXPECT_TRUE(open.messages[1]["content"].is_array());
  EXPECT_EQ(open.messages[3]["content"], "r1 r2");  // tool text parts are joined in both formats
}

TEST(ChatRequest, BadToolCallArgumentsInHistory) {
  ExpectBadRequest(R"({"messages": [{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "{oops"}}]}]})",
                   "Assistant tool call function.arguments must be valid JSON.");
  ExpectBadRequest(R"({"messages": [{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "[1]"}}]}]})",
                   "Assistant tool call function.arguments must be a JSON object.");
}

TEST(ChatRequest, ImagesAreNotSupportedYet) {
  ExpectBadRequest(R"({"messages": [{"role": "user", "content": [{"type": "text", "text": "what is this"},
                       {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]}]})",
                   "Image inputs are not supported by this server yet: messages[0].content[1] has type "
                   "'image_url'. Send text content only.");
  ExpectBadRequest(R"({"messages": [{"role": "user", "content": [{"type": "input_audio", "input_audio": {}}]}]})",
                   "Audio inputs are not supported by this server yet: messages[0].content[0] has type "
                   "'input_audio'. Send text content only.");
}

TEST(ChatRequest, ServingLayerChecksInSGLangOrder) {
  ExpectBadRequest(R"({"messages": []})", "Messages cannot be empty.");
  ExpectBadRequest(Body(R"("tool_choice": "required")"), "Tools cannot be empty if tool choice is set to required.");
  ExpectBadRequest(Body(R"("tool_choice": {"type": "function", "function": {"name": "f"}})"),
                   "Tools cannot be empty if tool choice is set to a specific tool.");
  const std::string tools = R"("tools": [{"type": "function", "function": {"name": "get_weather",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}])";
  ExpectBadRequest(Body(tools + R"(, "tool_choice": {"type": "function", "function": {"name": "nope"}})"),
                   "Tool 'nope' not found in tools list.");
  ExpectBadRequest(Body(R"("tools": [{"function": {"name": "f", "parameters": {"type": "strng"}}}])"),
                   "Tool 0 function has invalid 'parameters' schema: 'strng' is not valid under any of the "
                   "given schemas");
  ExpectBadRequest(Body(R"("tools": [{"function": {"name": "f", "parameters": {"type": "object"}}},
                                     {"function": {"name": "g", "parameters": {"properties": 5}}}])"),
                   "Tool 1 function has invalid 'parameters' schema: 5 is not of type 'object'");
  ExpectBadRequest(Body(R"("tools": [{"function": {"name": "f", "parameters": {"required": ["a", "a"]}}}])"),
                   "Tool 0 function has invalid 'parameters' schema: ['a', 'a'] has non-unique elements");
  std::string deep = R"({"type": "object"})";
  for (int i = 0; i < 80; ++i) deep = R"({"type": "object", "properties": {"x": )" + deep + "}}";
  ExpectBadRequest(Body(R"("tools": [{"function": {"name": "f", "parameters": )" + deep + "}}]"),
                   "Tool 0 function 'parameters' schema is too deeply nested or contains a cycle.");
  ServerLimits limits;
  limits.context_length = 4096;
  ExpectBadRequest(Body(R"("max_completion_tokens": 5000)"),
                   "max_completion_tokens is too large: 5000.This model supports at most 4096 completion tokens.",
                   limits);
  limits.allow_auto_truncate = true;
  EXPECT_TRUE(Chat(Body(R"("max_completion_tokens": 5000)"), limits).ok());
  ExpectBadRequest(Body(R"("response_format": {"type": "json_schema", "json_schema": {"name": "x"}})"),
                   "schema_ is required for json_schema response format request.");
  ExpectBadRequest(Body(R"("n": 0)"), "n must be at least 1, got 0.");
  ExpectBadRequest(Body(R"("top_logprobs": -1)"), "`top_logprobs` must be a positive value.");
}

TEST(ChatRequest, ToolsAndToolChoice) {
  const std::string tools = R"("tools": [{"type": "function", "function": {"name": "get_weather",
      "description": "Weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"},
      "days": {"type": "int"}}}}}, {"function": {"name": "get_time"}}])";
  auto r = Chat(Body(tools));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->tool_choice.mode, ToolChoiceMode::kAuto);  // default with tools
  EXPECT_TRUE(r->sampling.skip_special_tokens);  // tools or not: what the client asked (issue 24)
  ASSERT_EQ(r->tools.size(), 2u);
  EXPECT_EQ(r->tools[0].template_json.dump(),
            R"({"type":"function","function":{"description":"Weather","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"int"}}},"strict":false}})");
  EXPECT_EQ(r->tools[1].template_json.dump(),
            R"({"type":"function","function":{"description":null,"name":"get_time","parameters":null,"strict":false}})");

  r = Chat(Body(tools + R"(, "tool_choice": {"type": "function", "function": {"name": "get_time"}})"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->tool_choice.mode, ToolChoiceMode::kFunction);
  ChatTemplateInputs in = PrepareChatTemplateInputs(*r, ContentFormat::kString);
  ASSERT_EQ(in.tools.size(), 1u);  // only the named tool reaches the template
  EXPECT_EQ(in.tools[0]["function"]["name"], "get_time");

  r = Chat(Body(tools + R"(, "tool_choice": "none")"));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->sampling.skip_special_tokens);
  EXPECT_TRUE(PrepareChatTemplateInputs(*r, ContentFormat::kString).tools.is_null());

  ExpectValidation(Body(R"("tool_choice": "sometimes")"),
                   "[{'type': 'literal_error', 'loc': ('body', 'tool_choice', \"literal['auto','required','none']\"), "
                   "'msg': \"Input should be 'auto', 'required' or 'none'\"}]");
  ExpectValidation(Body(R"("tools": [{"type": "function"}])"),
                   "[{'type': 'missing', 'loc': ('body', 'tools', 0, 'function'), 'msg': 'Field required'}]");
  ExpectValidation(Body(R"("tools": [{"function": {"description": "no name"}}])"),
                   "[{'type': 'missing', 'loc': ('body', 'tools', 0, 'function', 'name'), 'msg': 'Field required'}]");

  // Tools on a system message also make tool_choice default to auto.
  r = Chat(R"({"messages": [{"role": "system", "content": "", "tools": [{"name": "x"}]}, {"role": "user", "content": "q"}]})");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->tool_choice.mode, ToolChoiceMode::kAuto);
}

TEST(ChatRequest, MaxTokensFollowsPythonOr) {
  EXPECT_EQ(Chat(Body(R"("max_tokens": 7)"))->sampling.max_new_tokens, 7);
  EXPECT_EQ(Chat(Body(R"("max_completion_tokens": 9, "max_tokens": 7)"))->sampling.max_new_tokens, 9);
  EXPECT_EQ(Chat(Body(R"("max_completion_tokens": 0, "max_tokens": 7)"))->sampling.max_new_tokens, 7);
  EXPECT_FALSE(Chat(Body(R"("max_completion_tokens": 0)"))->sampling.max_new_tokens.has_value());
}

TEST(ChatRequest, ReasoningEffortAndThinkingKwargs) {
  auto r = Chat(Body(R"("reasoning_effort": "none")"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->chat_template_kwargs, J(R"({"thinking": false, "enable_thinking": false})"));
  r = Chat(Body(R"("reasoning_effort": "high", "chat_template_kwargs": {"enable_thinking": false})"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->chat_template_kwargs, J(R"({"enable_thinking": false, "thinking": true})"));
  EXPECT_EQ(PrepareChatTemplateInputs(*r, ContentFormat::kString).kwargs,
            J(R"({"reasoning_effort": "high", "enable_thinking": false, "thinking": true})"));
  r = Chat(Body(R"("reasoning": {"enabled": true})"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->chat_template_kwargs, J(R"({"thinking": true, "enable_thinking": true})"));
  r = Chat(Body(R"("reasoning_effort": 0.5)"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r->reasoning_effort, "0.5");
  EXPECT_EQ(PrepareChatTemplateInputs(*r, ContentFormat::kString).kwargs["reasoning_effort"], 0.5);

  ExpectValidation(Body(R"("reasoning_effort": true)"),
                   "[{'type': 'value_error', 'loc': ('body', 'reasoning_effort'), 'msg': 'Value error, "
                   "reasoning_effort must not be a boolean'}]");
  ExpectValidation(Body(R"("reasoning_effort": 1.5)"),
                   "[{'type': 'less_than_equal', 'loc': ('body', 'reasoning_effort'), 'msg': 'Input should be "
                   "less than or equal to 0.99'}]");
  ExpectValidation(Body(R"("reasoning_effort": "extreme")"),
                   "[{'type': 'literal_error', 'loc': ('body', 'reasoning_effort'), 'msg': \"Input should be "
                   "'none', 'minimal', 'low', 'medium', 'high', 'xhigh' or 'max'\"}]");
  ExpectValidation(Body(R"("reasoning": {"effort": "loads"})"),
                   "[{'type': 'value_error', 'loc': ('body', 'reasoning'), 'msg': \"Value error, invalid "
                   "reasoning effort: 'loads'\"}]");
}

TEST(ChatRequest, StreamOptionsAndFlags) {
  const auto r = Chat(Body(R"("stream": true, "stream_options": {"include_usage": true, "continuous_usage_stats": true},
      "separate_reasoning": false, "stream_reasoning": false, "include_reasoning": false, "rid": ["r1"],
      "stop": "END", "stop_token_ids": [151645], "ignore_eos": true, "logit_bias": {"100": -5},
      "input_ids": [1, 2, 3], "user": "u", "continue_final_message": true, "unknown_field": {"x": 1})"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->stream && r->include_usage && r->continuous_usage_stats);
  EXPECT_FALSE(r->separate_reasoning || r->stream_reasoning || r->include_reasoning);
  EXPECT_EQ(*r->rid, "r1");
  EXPECT_EQ(r->sampling.stop, std::vector<std::string>{"END"});
  EXPECT_EQ(r->sampling.stop_token_ids, std::vector<int32_t>{151645});
  EXPECT_TRUE(r->sampling.ignore_eos);
  ASSERT_EQ(r->sampling.logit_bias.size(), 1u);
  EXPECT_EQ(r->sampling.logit_bias[0].first, "100");
  EXPECT_EQ(*r->input_ids, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_TRUE(r->continue_final_message);
  EXPECT_FALSE(r->return_prompt_token_ids);
}

// SGLang's return_prompt_token_ids: non-stream only.
TEST(ChatRequest, ReturnPromptTokenIds) {
  const auto r = Chat(Body(R"("return_prompt_token_ids": true)"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->return_prompt_token_ids);
  ExpectBadRequest(Body(R"("return_prompt_token_ids": true, "stream": true)"),
                   "return_prompt_token_ids is not supported with streaming. Please set stream=false when using "
                   "return_prompt_token_ids=true.");
  EXPECT_TRUE(Chat(Body(R"("return_prompt_token_ids": false, "stream": true)")).ok());
}

TEST(ChatRequest, Constraints) {
  auto obj = Chat(Body(R"("response_format": {"type": "json_object"})"));
  ASSERT_TRUE(obj.ok());
  ASSERT_TRUE(obj->sampling.constraint);
  EXPECT_EQ(obj->sampling.constraint->kind, ConstraintRequest::Kind::kJsonSchema);
  EXPECT_EQ(obj->sampling.constraint->text, R"({"type":"object"})");
  auto schema = Chat(Body(R"("response_format": {"type": "json_schema", "json_schema": {"name": "w", "schema": {"type": "integer"}}})"));
  ASSERT_TRUE(schema.ok());
  EXPECT_EQ(schema->sampling.constraint->text, R"({"type":"integer"})");
  auto regex = Chat(Body(R"("regex": "[a-z]+")"));
  ASSERT_TRUE(regex.ok());
  EXPECT_EQ(regex->sampling.constraint->kind, ConstraintRequest::Kind::kRegex);
  EXPECT_TRUE(Chat(Body(R"("response_format": {"type": "text"})")).ok());
  EXPECT_FALSE(Chat(Body(R"("response_format": {"type": "text"})"))->sampling.constraint);
  ExpectBadRequest(Body(R"("regex": "a", "ebnf": "root ::= 'a'")"), "Only one of regex, json_schema, or ebnf can be set.");
  ExpectBadRequest(Body(R"("regex": "a", "response_format": {"type": "json_object"})"),
                   "Only one of regex, json_schema, or ebnf can be set.");
  // stop_regex is refused as /generate refuses it (it was ignored here).
  ExpectBadRequest(Body(R"("stop_regex": "\\s4")"), "'stop_regex' is not supported by this server yet.");
  EXPECT_TRUE(Chat(Body(R"("stop_regex": null)")).ok());
  ExpectBadRequest(Body(R"("response_format": {"type": "structural_tag"})"),
                   "response_format type 'structural_tag' is not supported by tern; use 'json_schema' or "
                   "'json_object' (or the regex / ebnf fields).");
  ExpectValidation(Body(R"("response_format": {"type": "yaml"})"),
                   "[{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), 'msg': \"Input should "
                   "be 'text', 'json_object' or 'json_schema'\"}]");
  ExpectValidation(Body(R"("response_format": {"type": "json_schema", "json_schema": {"schema": {}}})"),
                   "[{'type': 'missing', 'loc': ('body', 'response_format', 'json_schema', 'name'), 'msg': "
                   "'Field required'}]");
}

TEST(ChatTemplateInputs, ContinueFinalMessageAndFormats) {
  auto r = Chat(R"({"messages": [{"role": "user", "content": "Write a haiku"},
                                 {"role": "assistant", "content": "Autumn moon"}], "continue_final_message": true})");
  ASSERT_TRUE(r.ok());
  const ChatTemplateInputs in = PrepareChatTemplateInputs(*r, ContentFormat::kString);
  EXPECT_EQ(in.messages.size(), 1u);
  EXPECT_EQ(in.assistant_prefix, "Autumn moon");

  EXPECT_EQ(DetectContentFormat("{%- for message in messages %}{{ message.content }}{% endfor %}"),
            ContentFormat::kString);
  EXPECT_EQ(DetectContentFormat("{% for item in message['content'] %}{{ item.text }}{% endfor %}"),
            ContentFormat::kOpenAi);
  EXPECT_EQ(DetectContentFormat("{%- for c in message.content -%}"), ContentFormat::kOpenAi);

  EXPECT_TRUE(PromptOpensReasoning("<|im_start|>assistant\n<think>\n"));
  EXPECT_FALSE(PromptOpensReasoning("<|im_start|>assistant\n<think>\n\n</think>\n\n"));
  EXPECT_FALSE(PromptOpensReasoning("<|im_start|>assistant\n"));
  EXPECT_TRUE(PromptOpensReasoning("<｜Assistant｜><think>"));
}

}  // namespace
}  // namespace tern::api
