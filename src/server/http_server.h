// HttpServer: serves HttpRoutes (plain values, http_routes.h) over sockets,
// with the limits one bad client must not get past (HttpLimits): every
// connection runs through a Connection (deadlines, byte budgets, shutdown),
// at most max_connections are served at once (more are answered 503 and
// closed), and every request body, chunked or compressed alike, is read
// through a bounded reader (413 past max_body_bytes decoded bytes) before a
// handler sees it.
//
// This header and http_connection.* are the only place that knows the HTTP
// library (Debian's cpp-httplib 0.11); nothing of it shows here.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "server/http_routes.h"
#include "server/http_types.h"

namespace tern::server {

struct HttpLimits {
  size_t max_body_bytes = 32 << 20;                    // decoded body; more is 413
  size_t max_header_bytes = 64 << 10;                  // request line and headers
  std::chrono::milliseconds read_timeout{60000};       // a whole request, from its first byte
  // Its line and headers, from its first byte: a connection trickling headers
  // holds a worker thread this long at most (nginx's client_header_timeout;
  // a body may then take the rest of read_timeout).
  std::chrono::milliseconds header_timeout{10000};
  std::chrono::milliseconds write_timeout{60000};      // progress of each write
  std::chrono::milliseconds keep_alive_timeout{5000};  // idle between requests
  size_t max_connections = 256;                        // open at once; more are answered 503 and closed
  size_t keep_alive_max_requests = 100;                // requests per connection
};

// A request whose framing tern refuses before reading its body.
struct FramingError {
  int status;
  std::string message;
};
// Checks a request's method and headers: methods tern serves, a
// Content-Length that is a plain decimal no larger than `max_body_bytes`,
// Transfer-Encoding only "chunked" and never with Content-Length.
std::optional<FramingError> CheckFraming(const std::string& method, const HttpHeaders& headers, size_t max_body_bytes);

// A body as the library offers it: `reader(receive)` calls receive(data, n)
// for each piece until receive returns false or the body ends; false when
// the body could not be read whole.
using BodyReceiver = std::function<bool(const char* data, size_t n)>;
using BodyReader = std::function<bool(const BodyReceiver& receive)>;
enum class BodyRead { kOk, kTooLarge, kBroken };
// Reads a body into `out`, stopping as soon as it passes `max_bytes` decoded
// bytes (kTooLarge); kBroken when the stream ended badly.
BodyRead ReadBodyBounded(const BodyReader& reader, size_t max_bytes, std::string* out);

class HttpServer {
 public:
  explicit HttpServer(const HttpLimits& limits);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Serves `routes` and their hooks; call once, before Run. A body sent to
  // a path no POST or PUT route takes is still read (bounded), then 404.
  void Mount(HttpRoutes routes);
  // Binds host:port and listens with the system's largest backlog. False
  // when the address cannot be bound (in use, or not this machine's).
  bool Listen(const std::string& host, int port);
  // Binds a free port of `host`; returns it, or <= 0 on failure.
  int ListenOnAnyPort(const std::string& host);
  // Accepts and serves connections until Stop (blocks; run it on a thread).
  // False when it could not run.
  bool Run();
  // Ends Run: no new connection is accepted. From any thread, also before
  // Run has begun accepting (then Run returns at once).
  void Stop();
  bool running() const;

  // Shutdown, in two steps: idle connections and requests still being read
  // close at once, no new request starts; then (CloseAll) every connection.
  void BeginShutdown();
  void CloseAll();
  size_t open_connections() const;
  const HttpLimits& limits() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tern::server
