// Plain HTTP values the route handlers work on: a request, a response, and a
// sink for streamed bodies. Nothing here knows a socket or the HTTP library
// (http_server.cc adapts the HTTP library to these), so a handler can be called
// with values in a unit test, and the library could be swapped.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tern::server {

// Header fields in arrival order, repeats kept; names compare
// case-insensitively (RFC 9110 section 5.1).
class HttpHeaders {
 public:
  void Add(std::string name, std::string value);
  // Replaces every field named `name` with one.
  void Set(std::string_view name, std::string value);
  void Remove(std::string_view name);
  bool Has(std::string_view name) const { return Count(name) > 0; }
  size_t Count(std::string_view name) const;
  // The first value of `name`; "" when there is none.
  std::string Get(std::string_view name) const;
  const std::vector<std::pair<std::string, std::string>>& entries() const { return entries_; }
  bool empty() const { return entries_.empty(); }

 private:
  std::vector<std::pair<std::string, std::string>> entries_;
};

// True when a and b are equal ignoring ASCII case.
bool EqualsIgnoreCase(std::string_view a, std::string_view b);

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string path;    // decoded, without the query string
  HttpHeaders headers;
  std::vector<std::pair<std::string, std::string>> query;  // decoded query parameters
  std::string body;  // read whole (within HttpLimits::max_body_bytes) before a route handler runs
  std::string remote_addr;
  std::vector<std::string> path_params;  // the route pattern's capture groups, in order
  // False once the client has hung up (for replies built before anything is
  // sent). Unset, as in a unit test: always connected.
  std::function<bool()> connected;

  bool ClientConnected() const { return !connected || connected(); }
  std::string Header(std::string_view name) const { return headers.Get(name); }
  std::optional<std::string> QueryParam(std::string_view name) const;
};

// Where a streamed body goes (chunked transfer encoding on the wire).
class ChunkSink {
 public:
  virtual ~ChunkSink() = default;
  // Sends `data` as one chunk; false once the client is gone, after which
  // nothing more is sent. Empty data sends nothing (and returns true).
  virtual bool Write(std::string_view data) = 0;
  // False once the client has gone away (or stopped reading for longer than
  // the write timeout). Sends nothing.
  virtual bool Writable() = 0;
  // Ends the body.
  virtual void Done() = 0;
};

// A body produced while it is sent.
struct StreamBody {
  // Called again and again until it calls sink.Done() or returns false
  // (which aborts the response: the connection closes). Each call writes what
  // is ready, or waits a little for news and returns true.
  std::function<bool(ChunkSink&)> next;
  // Called once when the stream is over; `completed` is false when it was
  // aborted or could not be written (the client went away).
  std::function<void(bool completed)> on_end;
};

// What a request's log line (request_log.h) says beyond its method, path
// and status: one record per request, shared by every stage that handles it
// (handlers fill it; a stream updates it as it runs).
struct RequestRecord {
  std::chrono::steady_clock::time_point received = std::chrono::steady_clock::now();
  std::string request_id;          // X-Request-Id when the client sent one, else the response's id
  std::string response_id;         // the response's id when X-Request-Id named the request otherwise
  int64_t prompt_tokens = -1;      // -1: not a generation
  int64_t completion_tokens = 0;   // summed over the choices
  bool client_gone = false;        // a stream ended because the client went away
  std::string sampling_json;       // the resolved sampling parameters (at --log-requests-level >= 1)
  // Texts only when the log keeps them (--log-requests): at most
  // text_chars bytes each (std::string::npos: all); 0: none.
  size_t text_chars = 0;
  std::string prompt_text, completion_text;
  void AppendCompletion(std::string_view text) {
    if (text_chars > completion_text.size()) completion_text.append(text.substr(0, text_chars - completion_text.size()));
  }
};

struct HttpResponse {
  int status = 0;            // 0: not set (200 once a route handled the request, 404 when none did)
  HttpHeaders headers;       // besides Content-Type
  std::string content_type;  // "" with an empty body
  std::string body;
  std::optional<StreamBody> stream;  // set: the body is streamed instead of `body`
  std::shared_ptr<RequestRecord> record = std::make_shared<RequestRecord>();  // the same for every stage

  void SetBody(int status_code, std::string text, std::string type) {
    status = status_code;
    body = std::move(text);
    content_type = std::move(type);
  }
  void SetStream(std::string type, StreamBody s) {
    content_type = std::move(type);
    stream = std::move(s);
  }
};

using HttpHandler = std::function<void(const HttpRequest&, HttpResponse&)>;

}  // namespace tern::server
