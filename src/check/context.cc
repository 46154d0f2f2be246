#include "check/context.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "check/degenerate.h"
#include "check/json_text.h"
#include "check/sse.h"

namespace tern::check {
namespace {

using nlohmann::json;

constexpr const char* kChatPath = "/v1/chat/completions";

// A 4xx that may come from an optional field we sent (not auth, not 404/429).
bool MayBeRejectedExtra(int status) { return status == 400 || status == 409 || status == 415 || status == 422; }

// The extras a request would use.
unsigned Wanted(const ChatRequest& req) {
  return (req.thinking == Thinking::kOff ? kReasoningEffort : 0u) | (req.logprobs ? kLogprobs : 0u) |
         (req.ignore_eos ? kIgnoreEos : 0u);
}

std::string Names(unsigned extras) {
  std::vector<std::string> n;
  if (extras & kReasoningEffort) n.push_back("reasoning_effort");
  if (extras & kLogprobs) n.push_back("logprobs");
  if (extras & kIgnoreEos) n.push_back("ignore_eos");
  return fmt::format("{}", fmt::join(n, ", "));
}

}  // namespace

json UserMessage(const std::string& text) { return json::array({{{"role", "user"}, {"content", text}}}); }

json BuildChatBody(const std::string& model, const ChatRequest& req, unsigned extras) {
  json b = {{"model", model}, {"messages", req.messages}, {"max_tokens", req.max_tokens}, {"temperature", 0},
            {"seed", 0},      {"stream", req.stream}};
  if (req.stream) b["stream_options"] = {{"include_usage", true}};
  if (req.thinking == Thinking::kOff) {
    b["chat_template_kwargs"] = {{"enable_thinking", false}, {"thinking", false}};
    if (extras & kReasoningEffort) b["reasoning_effort"] = "none";
  } else if (req.thinking == Thinking::kOn) {
    b["chat_template_kwargs"] = {{"enable_thinking", true}, {"thinking", true}};
  }
  if ((extras & kLogprobs) && req.logprobs) b["logprobs"] = true;
  if ((extras & kIgnoreEos) && req.ignore_eos) b["ignore_eos"] = true;
  if (!req.stop.empty()) b["stop"] = req.stop;
  if (!req.tools.is_null()) {
    b["tools"] = req.tools;
    b["tool_choice"] = "auto";
  }
  return b;
}

ChatResult CheckContext::Send(const ChatRequest& req, unsigned extras) {
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

ChatResult CheckContext::SendWithFallback(const ChatRequest& req) {
  unsigned allowed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    allowed = allowed_extras_;
  }
  const unsigned first = Wanted(req) & allowed;
  ChatResult r = Send(req, first);
  if (!MayBeRejectedExtra(r.http_status) || first == 0) return r;
  // Drop reasoning_effort first (the usual culprit), then everything optional.
  for (unsigned without : {unsigned{kReasoningEffort}, unsigned{kAllExtras}}) {
    if (!(first & without)) continue;
    ChatResult retry = Send(req, first & ~without);
    if (MayBeRejectedExtra(retry.http_status)) continue;
    std::lock_guard<std::mutex> lock(mu_);
    if (allowed_extras_ & first & without) {
      allowed_extras_ &= ~(first & without);
      std::string note =
          fmt::format("server rejected {} ({}); sent without from then on", Names(first & without), r.failure);
      notes_.push_back(note);
      retry.notes = note;
    }
    return retry;
  }
  return r;  // rejected whatever we left out: report the first error
}

ChatResult CheckContext::Chat(const ChatRequest& req) {
  ChatRequest plain = req;
  plain.stream = false;
  ChatResult r = SendWithFallback(plain);
  Record(r);
  return r;
}

ChatResult CheckContext::ChatStream(const ChatRequest& req) {
  ChatRequest s = req;
  s.stream = true;
  ChatResult r = SendWithFallback(s);
  Record(r);
  return r;
}

std::vector<std::string> CheckContext::Notes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return notes_;
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
