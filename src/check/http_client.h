// HttpClient: the few HTTP calls `tern check` makes, with timeouts.
//
// The HTTP library stays inside http_client.cc. Each call opens its own
// connection (Connection: close), so one HttpClient may be used from many
// threads at once. Transport failures (refused, timed out, reset before a
// status line) are an error Status; any HTTP status, 4xx/5xx included, is a
// reply for the caller to judge.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "check/url.h"

namespace tern::check {

struct HttpOptions {
  BaseUrl url;
  std::string api_key;            // sent as "Authorization: Bearer <key>" when not empty
  double timeout_s = 120;         // longest wait for the next byte; also caps a whole stream
  double connect_timeout_s = 10;  // TCP (and TLS) connect
};

struct HttpReply {
  int status = 0;
  std::string body;
  std::string content_type;
  double elapsed_s = 0;  // request sent .. body complete
};

// A streamed reply. The body bytes of a 2xx reply went to the callback; other
// replies keep their body here.
struct StreamReply {
  int status = 0;
  std::string content_type;
  std::string error_body;  // body of a non-2xx reply
  double elapsed_s = 0;
  // Set when the connection failed after the status line: the server dropped
  // it mid-body, a read timed out, or the whole-stream timeout ran out.
  std::string transport_error;
};

// Receives body bytes as they arrive; t_s is the time since the request was sent.
using ByteSink = std::function<void(std::string_view bytes, double t_s)>;

class HttpClient {
 public:
  explicit HttpClient(HttpOptions options) : options_(std::move(options)) {}

  Result<HttpReply> Get(std::string_view path) const;
  // POST with Content-Type: application/json. `body` need not be valid JSON
  // (the error-handling check sends a malformed one on purpose).
  Result<HttpReply> PostJson(std::string_view path, std::string_view body) const;
  Result<StreamReply> PostStream(std::string_view path, std::string_view body, const ByteSink& sink) const;

  const HttpOptions& options() const { return options_; }
  // "http://127.0.0.1:30000/v1/models", for messages.
  std::string UrlOf(std::string_view path) const { return options_.url.ToString() + std::string(path); }

 private:
  HttpOptions options_;
};

// Whether https:// URLs can be used in this build.
bool HttpsSupported();

}  // namespace tern::check
