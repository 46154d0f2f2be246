// GET /: the chat page (webui.h).
#include "server/webui.h"

namespace tern::server {

bool IsWebUiRequest(const HttpRequest& req) { return (req.method == "GET" || req.method == "HEAD") && req.path == "/"; }

void AddWebUiRoutes(HttpRoutes& routes) {
  routes.Get("/", [](const HttpRequest&, HttpResponse& res) {
    res.SetBody(200, std::string(WebUiPage()), "text/html; charset=utf-8");
    // The page loads nothing from anywhere and talks only to this server.
    res.headers.Add("Content-Security-Policy",
                    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; "
                    "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'");
    res.headers.Add("X-Content-Type-Options", "nosniff");
    res.headers.Add("Cache-Control", "no-cache");
  });
}

}  // namespace tern::server
