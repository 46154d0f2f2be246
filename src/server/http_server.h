// HttpServer: cpp-httplib's Server with the limits one bad client must not
// get past (HttpLimits): every connection runs through a Connection
// (deadlines, byte budgets, shutdown), at most max_connections are served at
// once (more are answered 503 and closed), and every request body, chunked
// or compressed alike, is read through a bounded reader (413 past
// max_body_bytes decoded bytes) before a handler sees it.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>

#include "server/http_connection.h"

namespace tern::server {

// A request whose framing tern refuses before reading its body.
struct FramingError {
  int status;
  std::string message;
};
// Checks a request's headers: methods tern serves, a Content-Length that is
// a plain decimal no larger than `max_body_bytes`, Transfer-Encoding only
// "chunked" and never with Content-Length.
std::optional<FramingError> CheckFraming(const httplib::Request& req, size_t max_body_bytes);

enum class BodyRead { kOk, kTooLarge, kBroken };
// Reads a body through `reader` into `out`, stopping as soon as it passes
// `max_bytes` decoded bytes (kTooLarge); kBroken when the stream ended badly.
BodyRead ReadBodyBounded(const httplib::ContentReader& reader, size_t max_bytes, std::string* out);

class HttpServer : public httplib::Server {
 public:
  explicit HttpServer(const HttpLimits& limits);

  // Body routes. The handler gets the request with its body read (bounded).
  HttpServer& Post(const std::string& pattern, Handler handler);
  HttpServer& Put(const std::string& pattern, Handler handler);
  // Answers a body sent to any other path (after a bounded read) with 404;
  // call after the routes.
  void AddBodyFallbacks();
  // Runs the framing checks (CheckFraming) before `handler`.
  HttpServer& set_pre_routing_handler(HandlerWithResponse handler);

  // Shutdown, in two steps: idle connections and requests still being read
  // close at once, no new request starts; then (CloseAll) every connection.
  void BeginShutdown();
  void CloseAll();
  size_t open_connections() const { return control_.open.load(); }
  const HttpLimits& limits() const { return control_.limits; }

 private:
  bool process_and_close_socket(socket_t sock) override;
  Server::HandlerWithContentReader Bounded(Handler handler);

  ConnectionControl control_;
};

// The worker threads: max_connections of them, one per connection served.
// A connection accepted while all are busy goes to one rejecting thread,
// which answers 503 and closes it (RejectingThisConnection).
class ConnectionPool : public httplib::TaskQueue {
 public:
  // `shed_idle_epoch` (optional) is bumped on each refusal.
  explicit ConnectionPool(size_t workers, std::atomic<uint64_t>* shed_idle_epoch = nullptr);
  ~ConnectionPool() override;
  void enqueue(std::function<void()> fn) override;
  void shutdown() override;

  // True on the rejecting thread.
  static bool RejectingThisConnection();

 private:
  void Work(bool rejecter);

  std::mutex mu_;
  std::condition_variable cv_, reject_cv_;
  std::deque<std::function<void()>> jobs_, rejects_;
  size_t workers_, busy_ = 0;
  std::atomic<uint64_t>* shed_idle_epoch_;
  bool shutdown_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace tern::server
