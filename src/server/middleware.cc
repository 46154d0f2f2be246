// The cross-cutting HTTP behaviour of tern serve: the API key, JSON bodies
// for the errors the HTTP layer makes itself, request ids (X-Request-Id),
// response counting and request logs; and the table of every route
// (ServerRoutes).
#include <fmt/format.h>

#include "api/error_json.h"
#include "server/context.h"
#include "server/http_routes.h"
#include "server/http_util.h"
#include "server/log.h"
#include "server/request_log.h"
#include "server/routes.h"
#include "server/webui.h"

namespace tern::server {

namespace {
// Constant-time comparison, so the key cannot be guessed byte by byte from timing.
bool SafeEquals(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) diff |= (unsigned char)(a[i] ^ b[i % (b.empty() ? 1 : b.size())]);
  return diff == 0 && !b.empty();
}
}  // namespace

void InstallMiddleware(HttpRoutes& routes, ServerContext& ctx) {
  routes.before_routing = [&ctx](const HttpRequest& req, HttpResponse& res) {
    // A gateway's id names the request in the log and comes back as it was sent.
    if (std::string id = UsableRequestId(req.Header("X-Request-Id")); !id.empty()) res.record->request_id = id;
    auto pass = [&] {
      // `curl -X POST .../flush_cache` sends neither Content-Length nor a
      // chunked body, which the HTTP library refuses for POST (RFC 9112 says such a
      // request has an empty body); SGLang's own docs call it that way.
      if (req.method == "POST" && req.path == "/flush_cache" && !req.headers.Has("Content-Length") &&
          !req.headers.Has("Transfer-Encoding")) {
        ReplyFlushCache(ctx, res);
        return true;
      }
      return false;
    };
    // The chat page needs no key: a browser sends none when it opens it; the page asks for it.
    if (ctx.opts.api_key.empty() || req.method == "OPTIONS" || req.path.rfind("/health", 0) == 0 ||
        req.path.rfind("/metrics", 0) == 0 || IsWebUiRequest(req))
      return pass();
    const std::string auth = req.Header("Authorization");
    const std::string prefix = "Bearer ";
    if (auth.rfind(prefix, 0) == 0 && SafeEquals(auth.substr(prefix.size()), ctx.opts.api_key)) return pass();
    res.SetBody(401, api::UnauthorizedBody(), "application/json");
    return true;
  };
  routes.on_error = [](const HttpRequest&, HttpResponse& res) {
    if (!res.body.empty()) return;
    if (res.status == 404) {
      ReplyFlatError(res, 404, "Not Found", "NotFoundError", {{"detail", "Not Found"}});
    } else if (res.status == 413) {
      ReplyFlatError(res, 413, "Request body too large", "RequestEntityTooLarge");
    } else if (res.status == 405) {
      ReplyFlatError(res, 405, "Method Not Allowed", "MethodNotAllowed", {{"detail", "Method Not Allowed"}});
    } else if (res.status >= 400) {
      ReplyFlatError(res, res.status, fmt::format("HTTP error {}", res.status));
    }
  };
  routes.on_exception = [](const HttpRequest&, HttpResponse& res, const std::string& what) {
    ReplyFlatError(res, 500, "Internal server error: " + what, "InternalServerError");
  };
  routes.before_send = [&ctx](const HttpRequest& req, HttpResponse& res) {
    std::string& id = res.record->request_id;  // the client's, the response's (a generation), or a new one
    if (id.empty()) id = UsableRequestId(req.Header("X-Request-Id"));
    if (id.empty()) id = ctx.NewRequestId();
    res.headers.Add("X-Request-Id", id);
  };
  routes.on_finished = [&ctx](const HttpRequest& req, const HttpResponse& res) {
    ctx.CountResponse(res.status);
    const auto now = std::chrono::steady_clock::now();
    const double ms = std::chrono::duration<double, std::milli>(now - res.record->received).count();
    const LogLevel level = IsProbePath(req.path) ? LogLevel::kDebug : LogLevel::kInfo;
    if (level < CurrentLogLevel().load()) return;
    const std::string line = FormatRequestLog({.req = req,
                                               .status = res.status,
                                               .record = *res.record,
                                               .latency_ms = ms,
                                               .time = std::chrono::system_clock::now(),
                                               .level = level == LogLevel::kDebug ? "debug" : "info"},
                                              ctx.request_log);
    if (ctx.request_log.format == RequestLogFormat::kJson)
      LogLine(level, line);
    else
      Log(level, "{}", line);
  };
}

HttpRoutes ServerRoutes(ServerContext& ctx) {
  HttpRoutes routes;
  InstallMiddleware(routes, ctx);
  AddInfoRoutes(routes, ctx);
  AddTokenizeRoutes(routes, ctx);
  AddGenerateRoutes(routes, ctx);
  AddOpenAiRoutes(routes, ctx);
  AddWebUiRoutes(routes);
  return routes;
}

}  // namespace tern::server
