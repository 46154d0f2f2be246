// ParseChatRequest: SGLang's ChatCompletionRequest model plus
// OpenAIServingChat._validate_request.
#include <cctype>

#include <fmt/format.h>

#include "api/chat_fields.h"
#include "api/py_text.h"
#include "api/request_common.h"

namespace tern::api {
namespace {

using internal::ReadMessages;

bool IsEffortTier(const std::string& s) {
  for (const char* t : {"none", "minimal", "low", "medium", "high", "xhigh", "max"})
    if (s == t) return true;
  return false;
}

// reasoning_effort: a tier or a float in [0, 0.99]; booleans are rejected.
void ReadReasoningEffort(FieldReader& r, std::optional<std::string>* out) {
  const Json* v = r.Get("reasoning_effort");
  if (!v) return;
  if (v->is_boolean()) {
    r.Error("reasoning_effort", "value_error", "Value error, reasoning_effort must not be a boolean");
    return;
  }
  if (v->is_string() && IsEffortTier(v->get<std::string>())) {
    *out = v->get<std::string>();
    return;
  }
  std::vector<FieldError> ignored;
  const auto f = FieldReader::ToFloat(*v, r.At("reasoning_effort"), &ignored);
  if (!f) {
    r.Error("reasoning_effort", "literal_error",
            "Input should be 'none', 'minimal', 'low', 'medium', 'high', 'xhigh' or 'max'");
    return;
  }
  if (*f < 0) {
    r.Error("reasoning_effort", "greater_than_equal", "Input should be greater than or equal to 0");
    return;
  }
  if (*f > 0.99) {
    r.Error("reasoning_effort", "less_than_equal", "Input should be less than or equal to 0.99");
    return;
  }
  *out = PyFloatRepr(*f);
}

// SGLang's normalize_reasoning_inputs: `reasoning: {effort, enabled}` and
// reasoning_effort set chat_template_kwargs.thinking/enable_thinking unless
// the client set them.
void NormalizeReasoning(FieldReader& r, ChatRequest* req) {
  std::optional<bool> thinking;
  if (const Json* reasoning = r.Get("reasoning"); reasoning && reasoning->is_object()) {
    const Json* effort = nullptr;
    for (const char* k : {"effort", "reasoning_effort"}) {
      const auto it = reasoning->find(k);
      if (it != reasoning->end() && !it->is_null()) {
        effort = &*it;
        break;
      }
    }
    if (effort) {
      if (effort->is_string() && IsEffortTier(effort->get<std::string>())) {
        req->reasoning_effort = effort->get<std::string>();
      } else if (effort->is_number()) {
        req->reasoning_effort = PyFloatRepr(effort->get<double>());
      } else {
        std::vector<FieldError> ignored;
        const auto f = effort->is_string()
                           ? FieldReader::ToFloat(*effort, r.At("reasoning"), &ignored)
                           : std::nullopt;
        if (f) req->reasoning_effort = PyFloatRepr(*f);
        else
          r.ErrorAt(r.At("reasoning"), "value_error",
                    fmt::format("Value error, invalid reasoning effort: {}", PyRepr(*effort)));
      }
    }
    const Json* enabled = nullptr;
    for (const char* k : {"enabled", "enable"}) {
      const auto it = reasoning->find(k);
      if (it != reasoning->end() && !it->is_null()) {
        enabled = &*it;
        break;
      }
    }
    if (enabled) {
      bool on = false;
      if (enabled->is_boolean()) on = enabled->get<bool>();
      else if (enabled->is_number()) on = enabled->get<double>() != 0;
      else if (enabled->is_string()) {
        std::string s = enabled->get<std::string>();
        for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        on = s == "1" || s == "true" || s == "yes" || s == "y" || s == "on";
      }
      if (on) thinking = true;
    }
  }
  if (req->reasoning_effort) thinking = *req->reasoning_effort != "none";
  if (thinking) {
    if (!req->chat_template_kwargs.contains("thinking"))
      req->chat_template_kwargs["thinking"] = *thinking;
    if (!req->chat_template_kwargs.contains("enable_thinking"))
      req->chat_template_kwargs["enable_thinking"] = *thinking;
  }
}

// serving_chat._validate_request, in SGLang's order.
std::optional<ApiError> ValidateChat(const ChatRequest& req, const Json& body,
                                     const ServerLimits& limits) {
  if (req.messages.empty()) return ApiError::BadRequest("Messages cannot be empty.");
  if (req.tool_choice.mode == ToolChoiceMode::kRequired && req.tools.empty())
    return ApiError::BadRequest("Tools cannot be empty if tool choice is set to required.");
  if (req.tool_choice.mode == ToolChoiceMode::kFunction) {
    if (req.tools.empty())
      return ApiError::BadRequest("Tools cannot be empty if tool choice is set to a specific tool.");
    bool found = false;
    for (const auto& t : req.tools) found = found || t.name == req.tool_choice.function_name;
    if (!found)
      return ApiError::BadRequest(
          fmt::format("Tool '{}' not found in tools list.", req.tool_choice.function_name));
  }
  for (size_t i = 0; i < req.tools.size(); ++i) {
    if (req.tools[i].parameters.is_null()) continue;
    bool too_deep = false;
    const std::string e = internal::CheckToolSchema(req.tools[i].parameters, &too_deep);
    if (too_deep)
      return ApiError::BadRequest(fmt::format(
          "Tool {} function 'parameters' schema is too deeply nested or contains a cycle.", i));
    if (!e.empty())
      return ApiError::BadRequest(
          fmt::format("Tool {} function has invalid 'parameters' schema: {}", i, e));
  }
  const auto& max_out = req.sampling.max_new_tokens;
  if (max_out && *max_out != 0 && limits.context_length && *max_out > *limits.context_length &&
      !limits.allow_auto_truncate)
    return ApiError::BadRequest(fmt::format(
        "max_completion_tokens is too large: {}.This model supports at most {} completion tokens.",
        *max_out, *limits.context_length));
  if (const auto rf = body.find("response_format"); rf != body.end() && rf->is_object() &&
                                                    rf->value("type", "") == "json_schema") {
    const auto js = rf->find("json_schema");
    const bool has_schema = (js != rf->end() && js->is_object() && js->contains("schema") &&
                             !(*js)["schema"].is_null()) ||
                            (rf->contains("schema") && !(*rf)["schema"].is_null());
    if (!has_schema)
      return ApiError::BadRequest("schema_ is required for json_schema response format request.");
  }
  return std::nullopt;
}

}  // namespace

ApiResult<ChatRequest> ParseChatRequest(const Json& body, const ServerLimits& limits) {
  if (!body.is_object())
    return ApiError::Validation({{"model_attributes_type", "('body',)",
                                  "Input should be a valid dictionary or object to extract fields from"}});
  std::vector<FieldError> errors;
  FieldReader r(body, Loc().Key("body"), &errors);
  ChatRequest req;

  bool message_level_tools = false;
  std::optional<ApiError> unsupported = ReadMessages(r, &req.messages, &message_level_tools);
  if (auto m = internal::ReadModel(r)) req.model = *m;
  internal::ReadOpenAiSampling(r, &req.sampling);
  // max_new_tokens = max_completion_tokens or max_tokens (Python `or`).
  const std::optional<int64_t> max_tokens = r.Int("max_tokens");
  const std::optional<int64_t> max_completion_tokens = r.Int("max_completion_tokens");
  req.sampling.max_new_tokens =
      (max_completion_tokens && *max_completion_tokens != 0) ? max_completion_tokens : max_tokens;
  if (auto v = r.Bool("logprobs")) req.logprobs = *v;
  if (auto v = r.Int("top_logprobs")) req.top_logprobs = *v;
  if (auto v = r.Bool("stream")) req.stream = *v;
  internal::ReadStreamOptions(r, &req.include_usage, &req.continuous_usage_stats);
  internal::ReadTools(r, &req.tools);
  internal::ReadToolChoice(r, r.Has("tools") || message_level_tools, &req.tool_choice);
  if (auto v = r.Bool("parallel_tool_calls")) req.parallel_tool_calls = *v;
  if (const Json* kw = r.Dict("chat_template_kwargs")) req.chat_template_kwargs = *kw;
  ReadReasoningEffort(r, &req.reasoning_effort);
  if (auto v = r.Bool("separate_reasoning")) req.separate_reasoning = *v;
  if (auto v = r.Bool("stream_reasoning")) req.stream_reasoning = *v;
  if (auto v = r.Bool("include_reasoning")) req.include_reasoning = *v;
  if (auto v = r.Bool("continue_final_message")) req.continue_final_message = *v;
  if (r.Has("input_ids")) req.input_ids = internal::ReadTokenIds(r, "input_ids");
  if (auto v = r.Bool("return_prompt_token_ids")) req.return_prompt_token_ids = *v;
  req.prompt_logprobs = r.Int("prompt_logprobs");
  req.rid = internal::ReadRid(r);
  req.user = r.String("user");
  internal::ValidateResponseFormat(r);
  NormalizeReasoning(r, &req);
  if (!errors.empty()) return ApiError::Validation(errors);

  // skip_special_tokens stays what the client asked (default true), tools or
  // not. SGLang turns it off whenever tools are given, so that parser tags
  // which are special tokens reach the parser; tern keeps exactly those tags
  // instead (ChatParserTags, applied by the server's GenerationRun), so end
  // of turn / end of text never reach content (issue 24).
  if (auto e = ValidateChat(req, body, limits)) return *e;
  if (auto e = internal::CheckN(req.sampling)) return *e;
  if (auto e = internal::CheckTopLogprobs("top_logprobs", req.top_logprobs, kMaxTopLogprobs)) return *e;
  if (req.prompt_logprobs) {
    if (*req.prompt_logprobs == -1)  // vLLM: the whole vocabulary
      return ApiError::BadRequest(fmt::format(
          "`prompt_logprobs` -1 (the whole vocabulary) is not supported; at most {}.", kMaxTopLogprobs));
    if (auto e = internal::CheckTopLogprobs("prompt_logprobs", *req.prompt_logprobs, kMaxTopLogprobs)) return *e;
  }
  if (unsupported) return *unsupported;
  if (auto e = internal::ReadConstraint(body, &req.sampling)) return *e;
  // SGLang's _convert_to_internal_request, after the serving-layer checks.
  if (req.stream && req.return_prompt_token_ids)
    return ApiError::BadRequest(
        "return_prompt_token_ids is not supported with streaming. Please set stream=false when using "
        "return_prompt_token_ids=true.");
  return req;
}

}  // namespace tern::api
