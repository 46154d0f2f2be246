// Request logs (issue 21 item 6): one line per finished request, the access
// log a sysadmin expects of a server: method, path, status, latency, the
// request id (X-Request-Id or the response's id), the client's address and,
// for generations, prompt and completion tokens. Text by default; JSON lines
// with --log-requests-format json (SGLang's flag). Prompt and completion
// text are never logged unless asked for with --log-requests and a
// --log-requests-level that includes them (SGLang's levels).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "server/http_types.h"

namespace tern::server {

enum class RequestLogFormat { kText, kJson };
std::optional<RequestLogFormat> ParseRequestLogFormat(std::string_view s);

struct RequestLogOptions {
  RequestLogFormat format = RequestLogFormat::kText;
  // --log-requests adds to each line what SGLang's --log-requests-level
  // says: 1 the sampling parameters; 2 those and the first
  // kPartialTextChars of the prompt and completion; 3 the whole texts.
  // Without it (and at level 0) a line holds the metadata alone.
  bool log_requests = false;
  int level = 2;
};
inline constexpr size_t kPartialTextChars = 2048;

// How many characters of prompt and completion text a line carries (0: none).
size_t LoggedTextChars(const RequestLogOptions& o);
// Whether lines carry the sampling parameters.
inline bool LogsSampling(const RequestLogOptions& o) { return o.log_requests && o.level >= 1; }

struct RequestLogLine {
  const HttpRequest& req;
  int status;
  const RequestRecord& record;
  double latency_ms;
  std::chrono::system_clock::time_point time;
  std::string_view level = "info";  // for the JSON field (probes log at debug)
};
// The line (no newline). Text:
//   POST /v1/chat/completions 200 41.2 ms id=chatcmpl-3f.. prompt_tokens=12 completion_tokens=30 remote=127.0.0.1
// JSON: {"time","level","event":"request","method","path","status","latency_ms","request_id","remote_addr",
//        ("response_id"),"prompt_tokens","completion_tokens",("client_gone"),("sampling"),("prompt","completion")}
// response_id: the response's own id, when the client's X-Request-Id named the request.
// Texts are cut at LoggedTextChars (on a UTF-8 boundary); control characters
// in the text form are escaped, so one request is always one line.
std::string FormatRequestLog(const RequestLogLine& line, const RequestLogOptions& o);

// A client's X-Request-Id when usable as a log field and header: 1..128
// visible ASCII characters, no quote or backslash. Else "".
std::string UsableRequestId(std::string_view id);

// Paths probed by load balancers and scrapers (/health*, /ping, /metrics):
// logged at debug level, so the info log holds the traffic.
bool IsProbePath(std::string_view path);

}  // namespace tern::server
