// The only file that sees cpp-httplib (Debian's libcpp-httplib, a compiled
// library; its pkg-config flags define CPPHTTPLIB_OPENSSL_SUPPORT, which
// changes class layouts, so this file must be built with exactly those flags).
#include "check/http_client.h"

#include <httplib.h>

#include <chrono>
#include <cmath>

namespace tern::check {
namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

void SetSeconds(double s, time_t* sec, time_t* usec) {
  if (!(s > 0)) s = 0.001;
  *sec = static_cast<time_t>(std::floor(s));
  *usec = static_cast<time_t>((s - std::floor(s)) * 1e6);
}

Status CheckScheme(const BaseUrl& url) {
  if (url.scheme == "https" && !HttpsSupported())
    return Status::Errorf("{}: https is not supported by this build (cpp-httplib without OpenSSL); use http://",
                          url.ToString());
  return Status::Ok();
}

std::unique_ptr<httplib::Client> MakeClient(const HttpOptions& o) {
  auto cli = std::make_unique<httplib::Client>(o.url.Origin());
  time_t sec, usec;
  SetSeconds(o.connect_timeout_s, &sec, &usec);
  cli->set_connection_timeout(sec, usec);
  SetSeconds(o.timeout_s, &sec, &usec);
  cli->set_read_timeout(sec, usec);
  cli->set_write_timeout(sec, usec);
  cli->set_keep_alive(false);
  cli->set_follow_location(false);
  cli->set_decompress(true);
  if (!o.api_key.empty()) cli->set_bearer_token_auth(o.api_key);
  return cli;
}

std::string Describe(httplib::Error e) {
  switch (e) {
    case httplib::Error::Connection:
      return "connection failed (refused or unreachable)";
    case httplib::Error::ConnectionTimeout:
      return "connect timed out";
    case httplib::Error::Read:
      return "read failed (connection closed, reset or timed out)";
    case httplib::Error::Write:
      return "write failed (connection closed)";
    case httplib::Error::Canceled:
      return "canceled (whole-request timeout)";
    case httplib::Error::SSLConnection:
      return "TLS handshake failed";
    case httplib::Error::SSLLoadingCerts:
      return "could not load the CA certificates";
    case httplib::Error::SSLServerVerification:
      return "TLS certificate verification failed";
    default:
      return httplib::to_string(e);
  }
}

Result<HttpReply> Send(const HttpOptions& o, const std::string& method, std::string_view path, std::string_view body) {
  TERN_RETURN_IF_ERROR(CheckScheme(o.url));
  auto cli = MakeClient(o);
  httplib::Request req;
  req.method = method;
  req.path = o.url.base_path + std::string(path);
  if (method == "POST") {
    req.body = std::string(body);
    req.set_header("Content-Type", "application/json");
  }
  req.set_header("Accept", "application/json");
  auto t0 = Clock::now();
  httplib::Response res;
  httplib::Error err = httplib::Error::Success;
  bool ok = cli->send(req, res, err);
  if (!ok || res.status <= 0) return Status::Errorf("{} {}{}: {}", method, o.url.ToString(), path, Describe(err));
  HttpReply out;
  out.status = res.status;
  out.body = std::move(res.body);
  out.content_type = res.get_header_value("Content-Type");
  out.elapsed_s = Since(t0);
  return out;
}

}  // namespace

bool HttpsSupported() {
#ifdef CPPHTTPLIB_OPENSSL_SUPPORT
  return true;
#else
  return false;
#endif
}

Result<HttpReply> HttpClient::Get(std::string_view path) const { return Send(options_, "GET", path, {}); }

Result<HttpReply> HttpClient::PostJson(std::string_view path, std::string_view body) const {
  return Send(options_, "POST", path, body);
}

Result<StreamReply> HttpClient::PostStream(std::string_view path, std::string_view body, const ByteSink& sink) const {
  TERN_RETURN_IF_ERROR(CheckScheme(options_.url));
  auto cli = MakeClient(options_);
  StreamReply out;
  bool got_status = false;
  bool deadline_hit = false;
  auto t0 = Clock::now();
  httplib::Request req;
  req.method = "POST";
  req.path = options_.url.base_path + std::string(path);
  req.body = std::string(body);
  req.set_header("Content-Type", "application/json");
  req.set_header("Accept", "text/event-stream");
  req.response_handler = [&](const httplib::Response& r) {
    got_status = true;
    out.status = r.status;
    out.content_type = r.get_header_value("Content-Type");
    return true;
  };
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    if (out.status >= 200 && out.status < 300) {
      sink(std::string_view(data, n), Since(t0));
    } else if (out.error_body.size() < (1u << 20)) {
      out.error_body.append(data, n);
    }
    if (Since(t0) > options_.timeout_s) {
      deadline_hit = true;
      return false;
    }
    return true;
  };
  httplib::Response res;
  httplib::Error err = httplib::Error::Success;
  bool ok = cli->send(req, res, err);
  out.elapsed_s = Since(t0);
  if (!got_status) return Status::Errorf("POST {}{}: {}", options_.url.ToString(), path, Describe(err));
  if (!ok) {
    out.transport_error =
        deadline_hit ? fmt::format("stream exceeded the {} s timeout", options_.timeout_s) : Describe(err);
  }
  return out;
}

}  // namespace tern::check
