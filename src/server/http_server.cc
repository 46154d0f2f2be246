// The HTTP adapter: cpp-httplib under HttpServer's limits, and the
// conversion between the library's requests and responses and the plain
// values (http_types.h) route handlers work on.
#include "server/http_server.h"

#include <fmt/format.h>
#include <httplib.h>
#include <poll.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <limits>
#include <mutex>
#include <thread>

#include "server/http_connection.h"
#include "server/http_util.h"
#include "server/log.h"

namespace tern::server {
namespace {

using HandlerResponse = httplib::Server::HandlerResponse;

// The record of the request this thread is serving (RequestRecord): made
// when its first byte arrives, shared by every plain response of its stages.
thread_local std::shared_ptr<RequestRecord> t_record;

HttpResponse NewResponse() {
  HttpResponse p;
  if (t_record) p.record = t_record;
  return p;
}

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

// Fields cpp-httplib adds to every request itself (the addresses of both
// ends); the plain request has remote_addr instead.
bool IsLibraryHeader(const std::string& name) {
  return name == "REMOTE_ADDR" || name == "REMOTE_PORT" || name == "LOCAL_ADDR" || name == "LOCAL_PORT";
}

// The plain request for `r`; `body` is moved in (the library's copy is not
// kept twice).
HttpRequest ToPlain(const httplib::Request& r, std::string body = {}) {
  HttpRequest p;
  p.method = r.method;
  p.path = r.path;
  for (const auto& [k, v] : r.headers)
    if (!IsLibraryHeader(k)) p.headers.Add(k, v);
  for (const auto& [k, v] : r.params) p.query.emplace_back(k, v);
  p.body = std::move(body);
  p.remote_addr = r.remote_addr;
  for (size_t i = 1; i < r.matches.size(); ++i) p.path_params.push_back(r.matches[i].str());
  p.connected = [] { return ClientConnected(); };  // handlers run on their connection's thread
  return p;
}

void SetContentType(httplib::Response& res, const std::string& type) {
  res.headers.erase("Content-Type");
  res.set_header("Content-Type", type.empty() ? "text/plain" : type);
}

// A stream's chunks to the library's chunked writer.
class LibrarySink final : public ChunkSink {
 public:
  explicit LibrarySink(httplib::DataSink& sink) : sink_(sink) {}
  // (The library reads an empty write as the end of the body.)
  bool Write(std::string_view data) override { return data.empty() || sink_.write(data.data(), data.size()); }
  bool Writable() override { return sink_.is_writable(); }
  void Done() override { sink_.done(); }

 private:
  httplib::DataSink& sink_;
};

// What a handler's plain response says, added to the library's: the status
// when set, headers, and the body or stream with its content type.
void Apply(HttpResponse&& p, httplib::Response& res) {
  if (p.status != 0) res.status = p.status;
  for (auto& [k, v] : p.headers.entries()) res.set_header(k, v);
  if (p.stream) {
    res.set_chunked_content_provider(
        p.content_type.empty() ? "text/plain" : p.content_type,
        [next = std::move(p.stream->next)](size_t, httplib::DataSink& sink) {
          LibrarySink s(sink);
          return next(s);
        },
        [on_end = std::move(p.stream->on_end)](bool completed) {
          if (on_end) on_end(completed);
        });
  } else if (!p.body.empty() || !p.content_type.empty()) {
    res.body = std::move(p.body);
    SetContentType(res, p.content_type);
  }
}

// Runs a hook that sees a response already made: it gets the status, content
// type and (with_body) body; what it changes or adds goes back.
template <typename Hook>
void RunOnResponse(const httplib::Request& req, httplib::Response& res, bool with_body, Hook&& hook) {
  HttpResponse p = NewResponse();
  p.status = res.status == -1 ? 0 : res.status;
  p.content_type = res.get_header_value("Content-Type");
  if (with_body) p.body = res.body;
  const std::string type_before = p.content_type;
  hook(ToPlain(req), p);
  if (p.status != 0) res.status = p.status;
  for (auto& [k, v] : p.headers.entries()) res.set_header(k, v);
  if (with_body && (p.body != res.body || p.content_type != type_before)) {
    res.body = std::move(p.body);
    SetContentType(res, p.content_type);
  }
}

void RefuseAndClose(httplib::Response& res, int status, const std::string& message) {
  res.status = status;
  res.set_content(ErrorBodyText(status, message), "application/json");
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

std::optional<FramingError> CheckFraming(const std::string& method, const HttpHeaders& headers, size_t max_body_bytes) {
  static const char* kMethods[] = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"};
  bool known = false;
  for (const char* m : kMethods) known |= method == m;
  if (!known) return FramingError{405, fmt::format("Method {} is not allowed", method)};
  const bool has_te = headers.Has("Transfer-Encoding");
  const size_t cl_count = headers.Count("Content-Length");
  if (has_te) {
    if (headers.Count("Transfer-Encoding") > 1 || Lower(Trim(headers.Get("Transfer-Encoding"))) != "chunked")
      return FramingError{
          501, fmt::format("Transfer-Encoding '{}' is not supported (only chunked)", headers.Get("Transfer-Encoding"))};
    if (cl_count > 0) return FramingError{400, "Invalid request: both Content-Length and Transfer-Encoding"};
  }
  if (cl_count > 1) return FramingError{400, "Invalid request: more than one Content-Length"};
  if (cl_count == 1) {
    const std::string v = Trim(headers.Get("Content-Length"));
    uint64_t len = 0;
    bool ok = !v.empty() && v.size() <= 19;
    for (char c : v) {
      if (c < '0' || c > '9')
        ok = false;
      else
        len = len * 10 + uint64_t(c - '0');
    }
    if (!ok) return FramingError{400, fmt::format("Invalid Content-Length '{}'", v)};
    if (len > max_body_bytes)
      return FramingError{413, fmt::format("Request body too large: {} bytes (the limit is {})", len, max_body_bytes)};
  }
  return std::nullopt;
}

BodyRead ReadBodyBounded(const BodyReader& reader, size_t max_bytes, std::string* out) {
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

class HttpServer::Impl : public httplib::Server {
 public:
  explicit Impl(const HttpLimits& limits);
  void Mount(HttpRoutes routes);
  bool Run();
  void Stop();
  // Debian's cpp-httplib is a compiled library that listens with a backlog
  // of 5: a burst of new connections (32 clients each reconnecting as a
  // batch of generations ends) overflowed the accept queue and ~1 request in
  // 4,000 got a connection reset. The socket is captured as httplib creates
  // it and listens again with the system's maximum backlog.
  void CaptureListenSocket();
  void RaiseBacklog();

  ConnectionControl control;

 private:
  bool process_and_close_socket(socket_t sock) override;
  // A body route: the handler runs once the body is read (bounded).
  HandlerWithContentReader Bounded(HttpHandler handler);
  // The framing checks, then the routes' own before_routing hook.
  HandlerResponse BeforeRouting(const httplib::Request& req, httplib::Response& res);

  HttpRoutes routes_;
  socket_t listen_socket_ = INVALID_SOCKET;
  std::mutex run_mu_;
  bool run_begun_ = false, stop_requested_ = false;
  std::atomic<bool> run_returned_{false};
};

HttpServer::Impl::Impl(const HttpLimits& limits) {
  control.limits = limits;
  const size_t workers = std::max<size_t>(limits.max_connections, 1);
  new_task_queue = [this, workers] { return new ConnectionPool(workers, &control.shed_idle_epoch); };
  // Content-Length beyond it is refused before reading (CheckFraming); the
  // library's own check stays as a second line.
  set_payload_max_length(limits.max_body_bytes);
  set_keep_alive_max_count(std::max<size_t>(limits.keep_alive_max_requests, 1));
  set_keep_alive_timeout(std::max<time_t>(1, time_t(limits.keep_alive_timeout.count() / 1000)));
  set_pre_routing_handler(
      [this](const httplib::Request& req, httplib::Response& res) { return BeforeRouting(req, res); });
}

httplib::Server::HandlerWithContentReader HttpServer::Impl::Bounded(HttpHandler handler) {
  return [this, handler](const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader) {
    std::string body;
    const BodyReader read = [&reader](const BodyReceiver& receive) { return reader(receive); };
    switch (ReadBodyBounded(read, control.limits.max_body_bytes, &body)) {
      case BodyRead::kTooLarge:
        return RefuseAndClose(
            res, 413, fmt::format("Request body too large (the limit is {} bytes)", control.limits.max_body_bytes));
      case BodyRead::kBroken:
        return RefuseAndClose(res, 400, "Invalid request: the body ended before it was complete");
      case BodyRead::kOk:
        break;
    }
    if (!handler) {  // a body to a path no route takes
      res.status = 404;
      return;
    }
    HttpResponse out = NewResponse();
    handler(ToPlain(req, std::move(body)), out);
    Apply(std::move(out), res);
  };
}

HandlerResponse HttpServer::Impl::BeforeRouting(const httplib::Request& req, httplib::Response& res) {
  // The request as the library will answer it, made safe before any handler:
  // - no byte ranges: nothing tern serves needs them, and the library builds
  //   a copy of the whole body per range asked for ("Range: bytes=-,-,-,...",
  //   ~4,000 whole copies in one header line, before the key is checked);
  // - replies compressed with gzip at most: the library takes Brotli whenever
  //   Accept-Encoding holds "br", at its default quality 11 (8 MB of logprob
  //   JSON: 0.57 MB/s against gzip's 47 MB/s, one Zen 5 core).
  auto& answered = const_cast<httplib::Request&>(req);
  answered.ranges.clear();
  if (answered.has_header("Accept-Encoding")) {
    bool gzip = false;
    for (auto [it, end] = answered.headers.equal_range("Accept-Encoding"); it != end; ++it)
      gzip = gzip || it->second.find("gzip") != std::string::npos;
    answered.headers.erase("Accept-Encoding");
    if (gzip) answered.headers.emplace("Accept-Encoding", "gzip");
  }
  const bool body_method = IsBodyMethod(req.method);
  const bool framed = req.has_header("Content-Length") || req.has_header("Transfer-Encoding");
  if (Connection* c = CurrentConnection()) c->BeginBody(/*no_body=*/body_method && !framed);
  HttpRequest plain = ToPlain(req);
  if (auto e = CheckFraming(plain.method, plain.headers, control.limits.max_body_bytes)) {
    RefuseAndClose(res, e->status, e->message);
    return HandlerResponse::Handled;
  }
  // The library reads no body for these methods: what was sent must not be
  // taken for the next request.
  if (!body_method && framed && req.get_header_value("Content-Length") != "0") CloseConnectionAfterResponse();
  // The library's chunked reader accepts a chunk whose trailing CRLF is
  // missing, so bytes after a malformed body could be read as a next request
  // (behind a proxy that forwards chunked bodies as sent): a chunked request
  // is the connection's last.
  if (req.has_header("Transfer-Encoding")) CloseConnectionAfterResponse();
  // No route takes a form; the library would parse one into handlers it
  // was not given (a 500 "bad_function_call").
  if (const std::string type = req.get_header_value("Content-Type");
      type.size() >= 10 && strncasecmp(type.data(), "multipart/", 10) == 0) {
    RefuseAndClose(res, 415, "multipart bodies are not accepted; send the request as application/json");
    return HandlerResponse::Handled;
  }
  if (!routes_.before_routing) return HandlerResponse::Unhandled;
  HttpResponse out = NewResponse();
  const bool handled = routes_.before_routing(plain, out);
  Apply(std::move(out), res);
  // Answered before its body was read (a 401, say): the body's bytes must not
  // be taken for the next request on this connection, so it closes.
  if (handled && body_method && framed && req.get_header_value("Content-Length") != "0") {
    res.set_header("Connection", "close");
    CloseConnectionAfterResponse();
  }
  return handled ? HandlerResponse::Handled : HandlerResponse::Unhandled;
}

void HttpServer::Impl::Mount(HttpRoutes routes) {
  routes_ = std::move(routes);
  for (const HttpRoutes::Route& r : routes_.routes()) {
    if (r.method == "GET") {
      Get(r.pattern, [h = r.handler](const httplib::Request& req, httplib::Response& res) {
        HttpResponse out = NewResponse();
        h(ToPlain(req, req.body), out);
        Apply(std::move(out), res);
      });
    } else if (r.method == "POST") {
      Post(r.pattern, Bounded(r.handler));
    } else if (r.method == "PUT") {
      Put(r.pattern, Bounded(r.handler));
    }
  }
  // A body sent to any other path is read (bounded) before the 404.
  Post(".*", Bounded(nullptr));
  Put(".*", Bounded(nullptr));
  Patch(".*", Bounded(nullptr));
  Delete(".*", Bounded(nullptr));

  set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (routes_.on_error) RunOnResponse(req, res, /*with_body=*/true, routes_.on_error);
  });
  set_exception_handler([this](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "unknown error";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    res.status = 500;
    if (routes_.on_exception)
      RunOnResponse(req, res, /*with_body=*/true,
                    [&](const HttpRequest& r, HttpResponse& p) { routes_.on_exception(r, p, what); });
  });
  set_post_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (routes_.before_send) RunOnResponse(req, res, /*with_body=*/false, routes_.before_send);
  });
  set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    if (!routes_.on_finished) return;
    HttpResponse p = NewResponse();
    p.status = res.status;
    p.content_type = res.get_header_value("Content-Type");
    routes_.on_finished(ToPlain(req), p);
  });
}

void HttpServer::Impl::CaptureListenSocket() {
  set_socket_options([this](socket_t sock) {
    httplib::default_socket_options(sock);
    listen_socket_ = sock;
  });
}

void HttpServer::Impl::RaiseBacklog() {
  if (listen_socket_ != INVALID_SOCKET && ::listen(listen_socket_, SOMAXCONN) != 0)
    Log(LogLevel::kWarning, "could not raise the listen backlog: {}", std::strerror(errno));
}

bool HttpServer::Impl::Run() {
  {
    std::lock_guard lock(run_mu_);
    if (stop_requested_) return false;
    run_begun_ = true;
  }
  const bool ok = listen_after_bind();
  run_returned_ = true;
  return ok;
}

void HttpServer::Impl::Stop() {
  {
    std::lock_guard lock(run_mu_);
    stop_requested_ = true;
    if (!run_begun_) return;
  }
  // The library's stop() does nothing until the listener is listening
  // (is_running): stopping earlier -- a warm-up that fails within
  // milliseconds -- would leave Run going and its thread never joined.
  while (!is_running() && !run_returned_.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  stop();
}

bool HttpServer::Impl::process_and_close_socket(socket_t sock) {
  control.open++;
  Connection conn(sock, control);
  bool ret = true, linger = false;
  if (ConnectionPool::RejectingThisConnection()) {
    const std::string body = ErrorBodyText(
        503, fmt::format("Too many connections: this server serves {} at once", control.limits.max_connections));
    conn.SendNow(
        fmt::format("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                    "Content-Length: {}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n{}",
                    body.size(), body));
  } else {
    CurrentConnectionScope scope(&conn);
    for (size_t left = control.limits.keep_alive_max_requests; left > 0; --left) {
      if (!conn.WaitForRequest()) break;
      t_record = std::make_shared<RequestRecord>();  // received: now, at the request's first byte
      bool closed = false;
      try {
        ret = process_request(conn, left == 1 || control.stopping.load(), closed, nullptr);
      } catch (const std::exception& e) {
        // Routing's exceptions become 500s in the library; these escaped
        // while a response was being written.
        Log(LogLevel::kError, "writing a response: {}", e.what());
        ret = false;
      } catch (...) {
        ret = false;
      }
      t_record.reset();
      if (conn.close_after_response) linger = true;
      if (!ret || closed || conn.broken() || conn.close_after_response || control.stopping.load()) break;
    }
  }
  if (linger && !control.closing.load()) LingeringClose(sock);
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
  control.open--;
  return ret;
}

HttpServer::HttpServer(const HttpLimits& limits) : impl_(std::make_unique<Impl>(limits)) {}
HttpServer::~HttpServer() = default;

void HttpServer::Mount(HttpRoutes routes) { impl_->Mount(std::move(routes)); }

bool HttpServer::Listen(const std::string& host, int port) {
  impl_->CaptureListenSocket();
  if (!impl_->bind_to_port(host, port)) return false;
  impl_->RaiseBacklog();
  return true;
}

int HttpServer::ListenOnAnyPort(const std::string& host) {
  impl_->CaptureListenSocket();
  const int port = impl_->bind_to_any_port(host);
  if (port > 0) impl_->RaiseBacklog();
  return port;
}

bool HttpServer::Run() { return impl_->Run(); }
void HttpServer::Stop() { impl_->Stop(); }
bool HttpServer::running() const { return impl_->is_running(); }
void HttpServer::BeginShutdown() { impl_->control.stopping = true; }
void HttpServer::CloseAll() { impl_->control.closing = true; }
size_t HttpServer::open_connections() const { return impl_->control.open.load(); }
const HttpLimits& HttpServer::limits() const { return impl_->control.limits; }

}  // namespace tern::server
