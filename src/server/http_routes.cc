#include "server/http_routes.h"

namespace tern::server {
namespace {

// Passes chunks on to `target` (or appends them to `body` without one),
// noting the end and a failed write, as the server's chunked writer does.
class TrackingSink final : public ChunkSink {
 public:
  TrackingSink(ChunkSink* target, std::string& body) : target_(target), body_(body) {}
  bool Write(std::string_view data) override {
    if (failed_ || done_) return false;
    if (data.empty()) return true;
    if (!target_) {
      body_.append(data);
      return true;
    }
    failed_ = !target_->Write(data);
    return !failed_;
  }
  bool Writable() override { return !failed_ && (!target_ || target_->Writable()); }
  void Done() override {
    if (failed_ || done_) return;
    done_ = true;
    if (target_) target_->Done();
  }
  bool done() const { return done_; }
  bool failed() const { return failed_; }

 private:
  ChunkSink* target_;
  std::string& body_;
  bool done_ = false, failed_ = false;
};

}  // namespace

void HttpRoutes::Add(const char* method, const std::string& pattern, HttpHandler handler) {
  routes_.push_back({.method = method, .pattern = pattern, .re = std::regex(pattern), .handler = std::move(handler)});
}

const HttpRoutes::Route* HttpRoutes::Match(HttpRequest& req) const {
  const std::string& method = req.method == "HEAD" ? std::string("GET") : req.method;
  std::smatch m;
  for (const Route& r : routes_) {
    if (r.method != method || !std::regex_match(req.path, m, r.re)) continue;
    req.path_params.clear();
    for (size_t i = 1; i < m.size(); ++i) req.path_params.push_back(m[i].str());
    return &r;
  }
  return nullptr;
}

HttpResponse HttpRoutes::Handle(HttpRequest req, ChunkSink* sink) const {
  HttpResponse res;
  bool routed = false;
  try {
    if (before_routing && before_routing(req, res)) {
      routed = true;
    } else if (const Route* r = Match(req)) {
      routed = true;
      r->handler(req, res);
    }
  } catch (const std::exception& e) {
    routed = true;
    if (on_exception) on_exception(req, res, e.what());
  } catch (...) {
    routed = true;
    if (on_exception) on_exception(req, res, "unknown error");
  }
  if (res.status == 0) res.status = routed ? 200 : 404;
  if (res.status >= 400 && on_error) on_error(req, res);
  if (before_send) before_send(req, res);
  if (res.stream) {
    StreamBody stream = std::move(*res.stream);
    res.stream.reset();
    bool completed = false;
    if (req.method != "HEAD") {
      TrackingSink tracking(sink, res.body);
      while (!tracking.done())
        if (!stream.next(tracking) || tracking.failed()) break;
      completed = tracking.done();
    }
    if (stream.on_end) stream.on_end(completed);
  }
  if (on_finished) on_finished(req, res);
  return res;
}

}  // namespace tern::server
