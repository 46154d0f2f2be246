#include "check/context.h"

#include <fmt/format.h>

#include "check/degenerate.h"
#include "check/json_text.h"
#include "check/sse.h"

namespace tern::check {
namespace {

using nlohmann::json;

constexpr const char* kChatPath = "/v1/chat/completions";

// A 4xx that may come from an optional field we sent (not auth, not 404/429).
bool MayBeRejectedExtra(int status) {
  return status == 400 || status == 409 || status == 415 || status == 422;
}

bool HasExtras(const ChatRequest& req) {
  return req.thinking == Thinking::kOff || req.logprobs || req.ignore_eos;
}

}  // namespace

json UserMessage(const std::string& text) { return json::array({{{"role", "user"}, {"content", text}}}); }

json BuildChatBody(const std::string& model, const ChatRequest& req, bool extras) {
  json b = {{"model", model}, {"messages", req.messages}, {"max_tokens", req.max_tokens},
            {"temperature", 0}, {"seed", 0}, {"stream", req.stream}};
  if (req.stream) b["stream_options"] = {{"include_usage", true}};
  if (req.thinking == Thinking::kOff) {
    b["chat_template_kwargs"] = {{"enable_thinking", false}, {"thinking", false}};
    if (extras) b["reasoning_effort"] = "none";
  } else if (req.thinking == Thinking::kOn) {
    b["chat_template_kwargs"] = {{"enable_thinking", true}, {"thinking", true}};
  }
  if (extras && req.logprobs) b["logprobs"] = true;
  if (extras && req.ignore_eos) b["ignore_eos"] = true;
  if (!req.tools.is_null()) {
    b["tools"] = req.tools;
    b["tool_choice"] = "auto";
  }
  return b;
}

ChatResult CheckContext::Send(const ChatRequest& req, bool extras) {
  const std::string body = BuildChatBody(server_.model, req, extras).dump();
  if (!req.stream) {
    auto reply = http_.PostJson(kChatPath, body);
    if (!reply.ok()) {
      ChatResult r;
      r.failure = reply.status().message();
      return r;
    }
    ChatResult r = ParseChatReply(reply->status, reply->body);
    r.latency_s = reply->elapsed_s;
    return r;
  }
  SseParser parser;
  StreamAssembler assembler;
  std::vector<SseEvent> events;
  std::string head;  // the first bytes, to explain a reply that is not an event stream
  auto reply = http_.PostStream(kChatPath, body, [&](std::string_view bytes, double t) {
    if (head.size() < 512) head.append(bytes.substr(0, 512 - head.size()));
    events.clear();
    parser.Feed(bytes, &events);
    for (const auto& e : events) assembler.OnEvent(e.data, t);
  });
  if (!reply.ok()) {
    ChatResult r;
    r.streamed = true;
    r.failure = reply.status().message();
    return r;
  }
  if (reply->status < 200 || reply->status >= 300) {
    ChatResult r = ParseChatReply(reply->status, reply->error_body);
    r.streamed = true;
    r.latency_s = reply->elapsed_s;
    return r;
  }
  ChatResult r = assembler.Finish(reply->status, reply->elapsed_s, reply->transport_error, parser.partial());
  if (r.events == 0)
    r.failure = fmt::format("no SSE events in the streamed reply (Content-Type '{}'{}): '{}'", reply->content_type,
                            reply->transport_error.empty() ? "" : ", " + reply->transport_error, Excerpt(head, 60));
  return r;
}

ChatResult CheckContext::Chat(const ChatRequest& req) {
  ChatRequest plain = req;
  plain.stream = false;
  ChatResult r = Send(plain, true);
  if (MayBeRejectedExtra(r.http_status) && HasExtras(plain)) {
    ChatResult retry = Send(plain, false);
    retry.notes = fmt::format("server rejected the optional fields ({}); retried without reasoning_effort/logprobs/ignore_eos",
                              r.failure);
    r = std::move(retry);
  }
  Record(r);
  return r;
}

ChatResult CheckContext::ChatStream(const ChatRequest& req) {
  ChatRequest s = req;
  s.stream = true;
  ChatResult r = Send(s, true);
  if (MayBeRejectedExtra(r.http_status) && HasExtras(s)) {
    ChatResult retry = Send(s, false);
    retry.notes = fmt::format("server rejected the optional fields ({}); retried without reasoning_effort/logprobs/ignore_eos",
                              r.failure);
    r = std::move(retry);
  }
  Record(r);
  return r;
}

void CheckContext::SetCurrentCheck(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  current_check_ = name;
}

void CheckContext::Record(const ChatResult& r) {
  if (!r.ok()) return;
  Scan s;
  s.findings = FindDegenerate(r);
  s.excerpt = Excerpt(r.AllText(), 40);
  std::lock_guard<std::mutex> lock(mu_);
  s.check = current_check_;
  scans_.push_back(std::move(s));
}

std::vector<CheckContext::Scan> CheckContext::Scans() const {
  std::lock_guard<std::mutex> lock(mu_);
  return scans_;
}

}  // namespace tern::check
