// HttpRoutes: the routes of one server and the hooks around them, as plain
// values (http_types.h). HttpServer (http_server.h) serves them over
// sockets; Handle runs one request through them in process, in the same
// order, so route handlers can be unit-tested without a socket.
#pragma once

#include <functional>
#include <regex>
#include <string>
#include <vector>

#include "server/http_types.h"

namespace tern::server {

class HttpRoutes {
 public:
  struct Route {
    std::string method;   // GET (which also answers HEAD), POST or PUT
    std::string pattern;  // an ECMAScript regex matched against the whole path
    std::regex re;
    HttpHandler handler;
  };

  // The first route that matches wins, in the order added; the pattern's
  // capture groups become the request's path_params. POST and PUT handlers
  // see the whole body (bounded by HttpLimits::max_body_bytes).
  void Get(const std::string& pattern, HttpHandler handler) { Add("GET", pattern, std::move(handler)); }
  void Post(const std::string& pattern, HttpHandler handler) { Add("POST", pattern, std::move(handler)); }
  void Put(const std::string& pattern, HttpHandler handler) { Add("PUT", pattern, std::move(handler)); }
  const std::vector<Route>& routes() const { return routes_; }
  // The route `req` goes to, or nullptr (then 404); fills req.path_params.
  const Route* Match(HttpRequest& req) const;

  // Hooks, each optional.
  // Before routing, once the headers are read (not the body): true when it
  // answered the request itself (a missing API key, say).
  std::function<bool(const HttpRequest&, HttpResponse&)> before_routing;
  // A response of status >= 400 about to be sent, including those the server
  // makes itself (no route: 404; a malformed request line: 400); it may fill
  // in a body. `res.body` is what is there so far.
  HttpHandler on_error;
  // A handler threw; `what` says what.
  std::function<void(const HttpRequest&, HttpResponse&, const std::string& what)> on_exception;
  // Just before the status line and headers go out (every response but the
  // 503 of a connection past the limit); it may add headers. `res` carries
  // the status and content type, not the body.
  HttpHandler before_send;
  // Once the response has been sent (a stream: after its last chunk). `res`
  // carries the status and content type, not the body.
  std::function<void(const HttpRequest&, const HttpResponse&)> on_finished;

  // Runs `req` as the server would: before_routing, the route (404 when none
  // matches), on_exception, on_error, before_send, the streamed body (into
  // `sink`, or appended to the returned body without one; not run for
  // HEAD), on_finished.
  HttpResponse Handle(HttpRequest req, ChunkSink* sink = nullptr) const;

 private:
  void Add(const char* method, const std::string& pattern, HttpHandler handler);

  std::vector<Route> routes_;
};

}  // namespace tern::server
