#include "server/http_server.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <limits>

#include <fmt/format.h>

#include "server/http_util.h"
#include "server/log.h"

namespace tern::server {
namespace {

thread_local bool t_rejecting = false;

bool IsBodyMethod(const std::string& m) { return m == "POST" || m == "PUT" || m == "PATCH" || m == "DELETE"; }

std::string Lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string Trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t')) --e;
  return s.substr(b, e - b);
}

void RefuseAndClose(httplib::Response& res, int status, const std::string& message) {
  ReplyFlatError(res, status, message);
  res.set_header("Connection", "close");
  CloseConnectionAfterResponse();
}

// After an error the client may still be sending a body nobody reads:
// closing with unread data sends a reset, and a reset makes the client's
// kernel drop the response it has not read yet (a 400 MB upload refused with
// 413 then looks like a connection cut with no answer). So, as nginx's
// lingering close: stop writing, then read and drop what arrives until the
// client stops sending (kQuiet with nothing) or kLingerTotal has passed. It
// is bounded in time only; dropping bytes costs no memory.
void LingeringClose(int fd) {
  constexpr auto kLingerTotal = std::chrono::seconds(5);
  constexpr int kQuietMs = 500;
  ::shutdown(fd, SHUT_WR);
  char buf[65536];
  const auto until = std::chrono::steady_clock::now() + kLingerTotal;
  while (std::chrono::steady_clock::now() < until) {
    pollfd p{.fd = fd, .events = POLLIN, .revents = 0};
    if (::poll(&p, 1, kQuietMs) <= 0) break;  // quiet (or an error): nothing left in flight
    const ssize_t n = ::recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) break;  // the client closed
  }
}

}  // namespace

std::optional<FramingError> CheckFraming(const httplib::Request& req, size_t max_body_bytes) {
  static const char* kMethods[] = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"};
  bool known = false;
  for (const char* m : kMethods) known |= req.method == m;
  if (!known) return FramingError{405, fmt::format("Method {} is not allowed", req.method)};
  const bool has_te = req.has_header("Transfer-Encoding");
  const size_t cl_count = req.get_header_value_count("Content-Length");
  if (has_te) {
    if (req.get_header_value_count("Transfer-Encoding") > 1 ||
        Lower(Trim(req.get_header_value("Transfer-Encoding"))) != "chunked")
      return FramingError{501, fmt::format("Transfer-Encoding '{}' is not supported (only chunked)",
                                           req.get_header_value("Transfer-Encoding"))};
    if (cl_count > 0) return FramingError{400, "Invalid request: both Content-Length and Transfer-Encoding"};
  }
  if (cl_count > 1) return FramingError{400, "Invalid request: more than one Content-Length"};
  if (cl_count == 1) {
    const std::string v = Trim(req.get_header_value("Content-Length"));
    uint64_t len = 0;
    bool ok = !v.empty() && v.size() <= 19;
    for (char c : v) {
      if (c < '0' || c > '9') ok = false;
      else len = len * 10 + uint64_t(c - '0');
    }
    if (!ok) return FramingError{400, fmt::format("Invalid Content-Length '{}'", v)};
    if (len > max_body_bytes)
      return FramingError{413, fmt::format("Request body too large: {} bytes (the limit is {})", len, max_body_bytes)};
  }
  return std::nullopt;
}

BodyRead ReadBodyBounded(const httplib::ContentReader& reader, size_t max_bytes, std::string* out) {
  bool too_large = false;
  const bool ok = reader([&](const char* data, size_t n) {
    if (n > max_bytes - out->size()) {
      too_large = true;
      return false;
    }
    out->append(data, n);
    return true;
  });
  if (too_large) return BodyRead::kTooLarge;
  return ok ? BodyRead::kOk : BodyRead::kBroken;
}

HttpServer::HttpServer(const HttpLimits& limits) {
  control_.limits = limits;
  const size_t workers = std::max<size_t>(limits.max_connections, 1);
  new_task_queue = [this, workers] { return new ConnectionPool(workers, &control_.shed_idle_epoch); };
  // Content-Length beyond it is refused before reading (CheckFraming); the
  // library's own check stays as a second line.
  set_payload_max_length(limits.max_body_bytes);
  set_keep_alive_max_count(std::max<size_t>(limits.keep_alive_max_requests, 1));
  set_keep_alive_timeout(std::max<time_t>(1, time_t(limits.keep_alive_timeout.count() / 1000)));
  set_pre_routing_handler(nullptr);
}

httplib::Server::HandlerWithContentReader HttpServer::Bounded(Handler handler) {
  return [this, handler](const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader) {
    std::string body;
    switch (ReadBodyBounded(reader, control_.limits.max_body_bytes, &body)) {
      case BodyRead::kTooLarge:
        return RefuseAndClose(res, 413, fmt::format("Request body too large (the limit is {} bytes)",
                                                    control_.limits.max_body_bytes));
      case BodyRead::kBroken:
        return RefuseAndClose(res, 400, "Invalid request: the body ended before it was complete");
      case BodyRead::kOk: break;
    }
    if (!handler) return;
    httplib::Request with_body = req;
    with_body.body = std::move(body);
    handler(with_body, res);
  };
}

HttpServer& HttpServer::Post(const std::string& pattern, Handler handler) {
  Server::Post(pattern, Bounded(std::move(handler)));
  return *this;
}

HttpServer& HttpServer::Put(const std::string& pattern, Handler handler) {
  Server::Put(pattern, Bounded(std::move(handler)));
  return *this;
}

void HttpServer::AddBodyFallbacks() {
  auto not_found = [](const httplib::Request&, httplib::Response& res) { res.status = 404; };
  Server::Post(".*", Bounded(not_found));
  Server::Put(".*", Bounded(not_found));
  Server::Patch(".*", Bounded(not_found));
  Server::Delete(".*", Bounded(not_found));
}

HttpServer& HttpServer::set_pre_routing_handler(HandlerWithResponse handler) {
  Server::set_pre_routing_handler([this, handler](const httplib::Request& req, httplib::Response& res) {
    const bool body_method = IsBodyMethod(req.method);
    const bool framed = req.has_header("Content-Length") || req.has_header("Transfer-Encoding");
    if (Connection* c = CurrentConnection()) c->BeginBody(/*no_body=*/body_method && !framed);
    if (auto e = CheckFraming(req, control_.limits.max_body_bytes)) {
      RefuseAndClose(res, e->status, e->message);
      return HandlerResponse::Handled;
    }
    // The library reads no body for these methods: what was sent must not be
    // taken for the next request.
    if (!body_method && framed && req.get_header_value("Content-Length") != "0") CloseConnectionAfterResponse();
    return handler ? handler(req, res) : HandlerResponse::Unhandled;
  });
  return *this;
}

void HttpServer::BeginShutdown() { control_.stopping = true; }
void HttpServer::CloseAll() { control_.closing = true; }

bool HttpServer::process_and_close_socket(socket_t sock) {
  control_.open++;
  Connection conn(sock, control_);
  bool ret = true, linger = false;
  if (ConnectionPool::RejectingThisConnection()) {
    const std::string body = ErrorBodyText(503, fmt::format("Too many connections: this server serves {} at once",
                                                            control_.limits.max_connections));
    conn.SendNow(fmt::format("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                             "Content-Length: {}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n{}",
                             body.size(), body));
  } else {
    CurrentConnectionScope scope(&conn);
    for (size_t left = control_.limits.keep_alive_max_requests; left > 0; --left) {
      if (!conn.WaitForRequest()) break;
      bool closed = false;
      try {
        ret = process_request(conn, left == 1 || control_.stopping.load(), closed, nullptr);
      } catch (const std::exception& e) {
        // Routing's exceptions become 500s in the library; these escaped
        // while a response was being written.
        Log(LogLevel::kError, "writing a response: {}", e.what());
        ret = false;
      } catch (...) {
        ret = false;
      }
      if (conn.close_after_response) linger = true;
      if (!ret || closed || conn.broken() || conn.close_after_response || control_.stopping.load()) break;
    }
  }
  if (linger && !control_.closing.load()) LingeringClose(sock);
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
  control_.open--;
  return ret;
}

ConnectionPool::ConnectionPool(size_t workers, std::atomic<uint64_t>* shed_idle_epoch)
    : workers_(workers), shed_idle_epoch_(shed_idle_epoch) {
  for (size_t i = 0; i < workers; ++i) threads_.emplace_back([this] { Work(false); });
  threads_.emplace_back([this] { Work(true); });
}

ConnectionPool::~ConnectionPool() { shutdown(); }

bool ConnectionPool::RejectingThisConnection() { return t_rejecting; }

void ConnectionPool::enqueue(std::function<void()> fn) {
  {
    std::lock_guard lock(mu_);
    if (busy_ + jobs_.size() >= workers_) {
      rejects_.push_back(std::move(fn));
      reject_cv_.notify_one();
      if (shed_idle_epoch_) shed_idle_epoch_->fetch_add(1);
      return;
    }
    jobs_.push_back(std::move(fn));
  }
  cv_.notify_one();
}

void ConnectionPool::Work(bool rejecter) {
  t_rejecting = rejecter;
  auto& queue = rejecter ? rejects_ : jobs_;
  auto& cv = rejecter ? reject_cv_ : cv_;
  for (;;) {
    std::function<void()> fn;
    {
      std::unique_lock lock(mu_);
      cv.wait(lock, [&] { return !queue.empty() || shutdown_; });
      if (queue.empty()) return;  // shut down and nothing left
      fn = std::move(queue.front());
      queue.pop_front();
      if (!rejecter) ++busy_;
    }
    try {
      fn();
    } catch (...) {
      // process_and_close_socket catches what a connection throws; nothing
      // may end the worker.
    }
    if (!rejecter) {
      std::lock_guard lock(mu_);
      --busy_;
    }
  }
}

void ConnectionPool::shutdown() {
  {
    std::lock_guard lock(mu_);
    if (shutdown_ && threads_.empty()) return;
    shutdown_ = true;
  }
  cv_.notify_all();
  reject_cv_.notify_all();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
}

}  // namespace tern::server
