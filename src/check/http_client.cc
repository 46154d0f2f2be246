// The only file that sees cpp-httplib (Debian's libcpp-httplib, a compiled
// library; its pkg-config flags define CPPHTTPLIB_OPENSSL_SUPPORT, which
// changes class layouts, so this file must be built with exactly those flags).
#include "check/http_client.h"

#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace tern::check {
namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The most of a reply (after decompression) or a stream that is read: far
// past any real answer a check asks for, short of what a gzip bomb or an
// endless stream would fill memory with.
constexpr size_t kMaxReplyBytes = size_t(256) << 20;

// Stops the client's request once the whole of it (connect, headers, body)
// has taken longer than `seconds`: cpp-httplib's read timeout bounds each
// read, so a server sending a byte now and then held a request for ever.
class Watchdog {
 public:
  Watchdog(httplib::Client& cli, double seconds)
      : deadline_(Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                                     std::clamp(seconds, 0.0, 365.0 * 86400.0)))),  // (inf or 1e300: a year)
        thread_([this, &cli] {
          std::unique_lock lock(mu_);
          if (!cv_.wait_until(lock, deadline_, [this] { return done_; })) {
            fired_ = true;
            cli.stop();
          }
        }) {}
  ~Watchdog() {
    {
      std::lock_guard lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  bool fired() {
    std::lock_guard lock(mu_);
    return fired_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false, fired_ = false;
  const Clock::time_point deadline_;
  std::thread thread_;
};

// The whole-request limit: the reply's timeout after the connect's.
double RequestSeconds(const HttpOptions& o) { return std::max(o.connect_timeout_s, 0.0) + std::max(o.timeout_s, 0.001); }

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
  std::string body_read;
  bool too_big = false;
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    if (body_read.size() + n > kMaxReplyBytes) {
      too_big = true;
      return false;
    }
    body_read.append(data, n);
    return true;
  };
  httplib::Response res;
  httplib::Error err = httplib::Error::Success;
  bool ok = false, late = false;
  {
    Watchdog watchdog(*cli, RequestSeconds(o));
    ok = cli->send(req, res, err);
    late = watchdog.fired();
  }
  if (too_big)
    return Status::Errorf("{} {}{}: the reply passed {} MiB", method, o.url.ToString(), path, kMaxReplyBytes >> 20);
  if (late)
    return Status::Errorf("{} {}{}: no whole reply within {} s", method, o.url.ToString(), path, RequestSeconds(o));
  if (!ok || res.status <= 0) return Status::Errorf("{} {}{}: {}", method, o.url.ToString(), path, Describe(err));
  HttpReply out;
  out.status = res.status;
  out.body = std::move(body_read);
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
  size_t streamed = 0;
  bool too_big = false;
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    if ((streamed += n) > kMaxReplyBytes) {
      too_big = true;
      return false;
    }
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
  bool ok = false;
  {
    // (the receiver's deadline needs data to arrive; this one does not)
    Watchdog watchdog(*cli, RequestSeconds(options_));
    ok = cli->send(req, res, err);
    deadline_hit = deadline_hit || watchdog.fired();
  }
  out.elapsed_s = Since(t0);
  if (!got_status)
    return Status::Errorf("POST {}{}: {}", options_.url.ToString(), path,
                          deadline_hit ? fmt::format("no reply within {} s", RequestSeconds(options_)) : Describe(err));
  if (!ok) {
    out.transport_error = too_big         ? fmt::format("stream passed {} MiB", kMaxReplyBytes >> 20)
                          : deadline_hit ? fmt::format("stream exceeded the {} s timeout", options_.timeout_s)
                                         : Describe(err);
  }
  return out;
}

}  // namespace tern::check
