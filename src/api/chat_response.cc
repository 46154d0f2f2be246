// /v1/chat/completions bodies and chunks (serving_chat.py, sse_utils.py).
#include "api/responses.h"

namespace tern::api {
namespace {

Json MatchedStop(const FinishReason& f) {
  if (f.kind != FinishReason::Kind::kStop) return nullptr;
  if (const auto* id = std::get_if<int32_t>(&f.matched)) return *id;
  if (const auto* s = std::get_if<std::string>(&f.matched)) return *s;
  return nullptr;
}

Json ToolCallJson(const ToolCall& c, int index) {
  return Json{{"id", c.id},
              {"index", index},
              {"type", "function"},
              {"function", Json{{"name", c.name}, {"arguments", c.arguments}}}};
}

}  // namespace

Json ChatCompletionJson(const ResponseMeta& meta, const std::vector<ChatChoice>& choices,
                        const Usage& usage, const std::vector<TokenLogprob>* prompt_logprobs) {
  Json out_choices = Json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    const ChatChoice& c = choices[i];
    Json message = Json::object();
    message["role"] = "assistant";
    message["content"] = c.content;  // "" rather than null (retokenization)
    message["reasoning_content"] = c.reasoning.empty() ? Json(nullptr) : Json(c.reasoning);
    if (c.tool_calls.empty()) {
      message["tool_calls"] = nullptr;
    } else {
      Json calls = Json::array();
      for (size_t k = 0; k < c.tool_calls.size(); ++k) calls.push_back(ToolCallJson(c.tool_calls[k], int(k)));
      message["tool_calls"] = std::move(calls);
    }
    if (meta.reasoning_alias) message["reasoning"] = message["reasoning_content"];

    // A normal stop with tool calls reports "tool_calls" (matched_stop cleared).
    const bool tool_stop = !c.tool_calls.empty() && c.finish.kind == FinishReason::Kind::kStop;
    Json choice = Json::object();
    choice["index"] = i;
    choice["message"] = std::move(message);
    choice["logprobs"] = c.logprobs ? ChatLogprobsJson(*c.logprobs) : Json(nullptr);
    choice["finish_reason"] = tool_stop ? std::string_view("tool_calls") : FinishReasonType(c.finish);
    choice["matched_stop"] = tool_stop ? Json(nullptr) : MatchedStop(c.finish);
    if (c.prompt_token_ids) choice["prompt_token_ids"] = *c.prompt_token_ids;
    out_choices.push_back(std::move(choice));
  }
  Json j = Json::object();
  j["id"] = meta.id;
  j["object"] = "chat.completion";
  j["created"] = meta.created;
  j["model"] = meta.model;
  j["choices"] = std::move(out_choices);
  j["usage"] = UsageJson(usage);
  if (prompt_logprobs) j["prompt_logprobs"] = PromptLogprobsJson(*prompt_logprobs);
  j["metadata"] = Json{{"weight_version", meta.weight_version}};
  return j;
}

Json ChatStreamEncoder::Chunk(int index, Json delta, const Usage* usage, const Json* logprobs) const {
  Json choice = Json::object();
  choice["index"] = index;
  choice["delta"] = std::move(delta);
  choice["logprobs"] = logprobs ? *logprobs : Json(nullptr);
  choice["finish_reason"] = nullptr;
  choice["matched_stop"] = nullptr;
  Json j = Json::object();
  j["id"] = meta_.id;
  j["object"] = "chat.completion.chunk";
  j["created"] = meta_.created;
  j["model"] = meta_.model;
  j["choices"] = Json::array({std::move(choice)});
  if (usage) j["usage"] = UsageJson(*usage);
  return j;
}

std::string ChatStreamEncoder::Role(int index) {
  return SseEvent(Chunk(index, Json{{"role", "assistant"}, {"content", ""}}, nullptr, nullptr));
}

std::string ChatStreamEncoder::Reasoning(int index, std::string_view text, const Usage* usage,
                                         const Json* logprobs) {
  Json delta = Json{{"reasoning_content", text}};
  if (meta_.reasoning_alias) delta["reasoning"] = text;
  return SseEvent(Chunk(index, std::move(delta), usage, logprobs));
}

std::string ChatStreamEncoder::Content(int index, std::string_view text, const Usage* usage,
                                       const Json* logprobs) {
  return SseEvent(Chunk(index, Json{{"content", text}}, usage, logprobs));
}

std::string ChatStreamEncoder::ToolCall(int index, const ToolCallDelta& call, const Usage* usage) {
  if (index >= 0) {
    if (streamed_tool_calls_.size() <= static_cast<size_t>(index)) streamed_tool_calls_.resize(index + 1);
    streamed_tool_calls_[index] = true;
  }
  Json entry = Json::object();
  if (!call.id.empty()) entry["id"] = call.id;
  entry["index"] = call.index;
  Json function = Json::object();
  if (!call.name.empty()) {
    entry["type"] = "function";
    function["name"] = call.name;
  }
  function["arguments"] = call.arguments;
  entry["function"] = std::move(function);
  return SseEvent(Chunk(index, Json{{"tool_calls", Json::array({std::move(entry)})}}, usage, nullptr));
}

std::string ChatStreamEncoder::Finish(int index, const FinishReason& finish) {
  const bool tool_stop = index >= 0 && static_cast<size_t>(index) < streamed_tool_calls_.size() &&
                         streamed_tool_calls_[index] && finish.kind == FinishReason::Kind::kStop;
  Json j = Chunk(index, Json::object(), nullptr, nullptr);
  Json& choice = j["choices"][0];
  choice["finish_reason"] = tool_stop ? std::string_view("tool_calls") : FinishReasonType(finish);
  choice["matched_stop"] = MatchedStop(finish);  // SGLang's stream keeps it
  return SseEvent(j);
}

std::string ChatStreamEncoder::UsageChunk(const Usage& usage) {
  Json j = Json::object();
  j["id"] = meta_.id;
  j["object"] = "chat.completion.chunk";
  j["created"] = meta_.created;
  j["model"] = meta_.model;
  j["choices"] = Json::array();
  j["usage"] = UsageJson(usage);
  return SseEvent(j);
}

}  // namespace tern::api
