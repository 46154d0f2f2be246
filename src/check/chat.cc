#include "check/chat.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "check/json_text.h"

namespace tern::check {
namespace {

using nlohmann::json;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Appends the chosen-token logprobs of a choice's "logprobs" object, in the
// chat form {"content":[{"token","logprob"}]} or the completions form
// {"tokens":[..],"token_logprobs":[..]}.
void ReadLogprobs(const json& lp, ChatResult* r) {
  if (!lp.is_object()) return;
  const json& content = JsonField(lp, "content");
  if (content.is_array()) {
    r->has_logprobs = true;
    for (const json& e : content) {
      r->tokens.push_back(JsonString(e, "token").value_or(""));
      r->logprobs.push_back(JsonNumber(e, "logprob").value_or(kNaN));
    }
    return;
  }
  const json& toks = JsonField(lp, "tokens");
  const json& vals = JsonField(lp, "token_logprobs");
  if (vals.is_array()) {
    r->has_logprobs = true;
    for (size_t i = 0; i < vals.size(); ++i) {
      r->tokens.push_back(toks.is_array() && i < toks.size() && toks[i].is_string() ? toks[i].get<std::string>() : "");
      r->logprobs.push_back(vals[i].is_number() ? vals[i].get<double>() : kNaN);
    }
  }
}

void ReadUsage(const json& usage, ChatResult* r) {
  if (!usage.is_object()) return;
  if (auto p = JsonInt(usage, "prompt_tokens")) r->prompt_tokens = *p;
  if (auto c = JsonInt(usage, "completion_tokens")) r->completion_tokens = *c;
}

// Reads reasoning from "reasoning_content" and/or "reasoning" of a message or delta.
// Returns the text (nullopt when both are null or missing) and names the field.
std::optional<std::string> ReadReasoning(const json& msg, std::string* field) {
  auto rc = JsonString(msg, "reasoning_content");
  auto r = JsonString(msg, "reasoning");
  if (rc && r) {
    *field = "reasoning_content+reasoning";
    return rc->size() >= r->size() ? rc : r;
  }
  if (rc) *field = "reasoning_content";
  if (r) *field = "reasoning";
  return rc ? rc : r;
}

// An error object inside a 200 reply or a stream chunk, if any.
std::optional<std::string> InlineError(const json& j) {
  if (!j.is_object()) return std::nullopt;
  if (j.contains("error") && !j["error"].is_null()) {
    ApiError e = ParseApiError(j.dump());
    return e.message.empty() ? j["error"].dump() : e.message;
  }
  if (JsonString(j, "object") == "error") return JsonString(j, "message").value_or("error");
  return std::nullopt;
}

}  // namespace

std::string ChatResult::AllText() const {
  std::string s = reasoning.value_or("");
  if (!s.empty() && content && !content->empty()) s += "\n";
  s += content.value_or("");
  for (const auto& t : tool_calls) s += "\n" + t.arguments;
  return s;
}

ApiError ParseApiError(std::string_view body) {
  ApiError e;
  std::string trimmed(body);
  while (!trimmed.empty() && std::isspace(static_cast<unsigned char>(trimmed.back()))) trimmed.pop_back();
  if (trimmed.empty()) {
    e.shape = "empty";
    return e;
  }
  auto j = ParseJsonLenient(trimmed);
  if (!j || !j->is_object()) {
    e.shape = "text";
    e.message = Excerpt(trimmed, 200);
    return e;
  }
  const json& err = JsonField(*j, "error");
  if (err.is_object()) {
    e.shape = "nested";
    e.message = JsonString(err, "message").value_or("");
    e.type = JsonString(err, "type").value_or("");
    if (e.type.empty()) {
      if (auto code = JsonInt(err, "code")) e.type = std::to_string(*code);
    }
  } else if (err.is_string()) {
    e.shape = "string";
    e.message = err.get<std::string>();
  } else if (JsonString(*j, "message")) {
    e.shape = "flat";
    e.message = *JsonString(*j, "message");
    e.type = JsonString(*j, "type").value_or("");
  } else if (j->contains("detail")) {
    e.shape = "detail";
    const json& d = (*j)["detail"];
    e.message = d.is_string() ? d.get<std::string>() : Excerpt(d.dump(), 200);
  } else {
    e.shape = "text";
    e.message = Excerpt(trimmed, 200);
  }
  return e;
}

ChatResult ParseChatReply(int http_status, std::string_view body) {
  ChatResult r;
  r.http_status = http_status;
  if (http_status < 200 || http_status >= 300) {
    r.error = ParseApiError(body);
    r.failure = fmt::format("HTTP {}: {}", http_status, r.error->message.empty() ? "(no message)" : r.error->message);
    return r;
  }
  SanitizedJson info;
  auto j = ParseJsonLenient(body, &info);
  r.nonfinite_json = info.nonfinite;
  r.invalid_utf8 = info.invalid_utf8;
  if (!j || !j->is_object()) {
    r.failure = fmt::format("reply is not a JSON object: '{}'", Excerpt(body, 60));
    return r;
  }
  if (auto e = InlineError(*j)) {
    r.failure = fmt::format("error in an HTTP {} reply: {}", http_status, *e);
    return r;
  }
  ReadUsage(JsonField(*j, "usage"), &r);
  const json& choices = JsonField(*j, "choices");
  if (!choices.is_array() || choices.empty() || !choices[0].is_object()) {
    r.failure = "reply has no choices";
    return r;
  }
  const json& choice = choices[0];
  r.finish_reason = JsonString(choice, "finish_reason").value_or("");
  const json& msg = JsonField(choice, "message");
  if (!msg.is_object()) {
    r.failure = "choices[0] has no message object";
    return r;
  }
  r.content = JsonString(msg, "content");
  r.reasoning = ReadReasoning(msg, &r.reasoning_field);
  const json& calls = JsonField(msg, "tool_calls");
  if (calls.is_array()) {
    for (const json& c : calls) {
      ToolCall t;
      t.id = JsonString(c, "id").value_or("");
      const json& f = JsonField(c, "function");
      t.name = JsonString(f, "name").value_or("");
      const json& args = JsonField(f, "arguments");
      // Arguments are a JSON string per OpenAI; some servers send an object.
      t.arguments = args.is_string() ? args.get<std::string>() : args.is_null() ? "" : args.dump();
      r.tool_calls.push_back(std::move(t));
    }
  }
  ReadLogprobs(JsonField(choice, "logprobs"), &r);
  return r;
}

void StreamAssembler::OnEvent(std::string_view data, double t_s) {
  ++r_.events;
  std::string_view trimmed = data;
  while (!trimmed.empty() && std::isspace(static_cast<unsigned char>(trimmed.back()))) trimmed.remove_suffix(1);
  if (trimmed == "[DONE]") {
    r_.done_seen = true;
    return;
  }
  if (r_.done_seen && r_.stream_error.empty()) r_.stream_error = "data arrived after [DONE]";
  SanitizedJson info;
  auto j = ParseJsonLenient(data, &info);
  r_.nonfinite_json += info.nonfinite;
  r_.invalid_utf8 += info.invalid_utf8;
  if (!j || !j->is_object()) {
    if (r_.stream_error.empty())
      r_.stream_error = fmt::format("event {} is not JSON: '{}'", r_.events, Excerpt(data, 60));
    return;
  }
  if (auto e = InlineError(*j)) {
    if (r_.stream_error.empty()) r_.stream_error = fmt::format("error chunk: {}", *e);
    return;
  }
  const json& usage = JsonField(*j, "usage");
  if (usage.is_object()) {
    r_.usage_seen = true;
    ReadUsage(usage, &r_);
  }
  const json& choices = JsonField(*j, "choices");
  if (!choices.is_array() || choices.empty()) return;  // the usage chunk has "choices": []
  const json& choice = choices[0];
  if (auto fr = JsonString(choice, "finish_reason")) r_.finish_reason = *fr;
  ReadLogprobs(JsonField(choice, "logprobs"), &r_);
  const json& delta = JsonField(choice, "delta");
  if (!delta.is_object()) return;
  bool text = false;
  if (auto c = JsonString(delta, "content")) {
    any_content_ = true;
    content_ += *c;
    text = text || !c->empty();
  }
  std::string field;
  if (auto rs = ReadReasoning(delta, &field)) {
    any_reasoning_ = true;
    if (r_.reasoning_field.empty() || r_.reasoning_field == field) r_.reasoning_field = field;
    reasoning_ += *rs;
    text = text || !rs->empty();
  }
  const json& calls = JsonField(delta, "tool_calls");
  if (calls.is_array()) {
    for (const json& c : calls) {
      size_t index = static_cast<size_t>(JsonInt(c, "index").value_or(static_cast<int64_t>(r_.tool_calls.size())));
      if (index > 64) continue;  // nonsense index; do not allocate for it
      if (r_.tool_calls.size() <= index) r_.tool_calls.resize(index + 1);
      ToolCall& t = r_.tool_calls[index];
      if (auto id = JsonString(c, "id"); id && t.id.empty()) t.id = *id;
      const json& f = JsonField(c, "function");
      if (auto name = JsonString(f, "name"); name && t.name.empty()) t.name = *name;
      if (auto args = JsonString(f, "arguments")) t.arguments += *args;
      text = true;
    }
  }
  if (text) {
    ++r_.content_chunks;
    if (!r_.ttft_s) r_.ttft_s = t_s;
  }
}

ChatResult StreamAssembler::Finish(int http_status, double latency_s, std::string_view transport_error,
                                   std::string_view partial) {
  r_.http_status = http_status;
  r_.latency_s = latency_s;
  if (any_content_) r_.content = content_;
  if (any_reasoning_) r_.reasoning = reasoning_;
  if (!r_.done_seen) {
    std::string why = transport_error.empty() ? "the server closed the stream" : std::string(transport_error);
    r_.stream_error = fmt::format("stream ended without [DONE] after {} events ({}){}", r_.events, why,
                                  partial.empty() ? "" : fmt::format("; unfinished event '{}'", Excerpt(partial, 40)));
  } else if (!transport_error.empty() && r_.stream_error.empty()) {
    r_.stream_error = fmt::format("connection error after [DONE]: {}", transport_error);
  }
  if (r_.events == 0)
    r_.failure = "stream carried no events" + (transport_error.empty() ? "" : fmt::format(" ({})", transport_error));
  return r_;
}

}  // namespace tern::check
