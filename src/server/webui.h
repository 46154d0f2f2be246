// The chat page at / (src/server/webui/index.html, built into the binary).
#pragma once

#include <string_view>

#include "server/http_routes.h"

namespace tern::server {

// The page's HTML, CSS and script: one self-contained document.
std::string_view WebUiPage();

// GET / (and HEAD): the page, reachable without the API key (a browser sends
// none when it opens a page; the page itself asks for it and sends it).
void AddWebUiRoutes(HttpRoutes& routes);
// Whether `method` `path` is the page, which needs no API key.
bool IsWebUiRequest(const HttpRequest& req);

}  // namespace tern::server
