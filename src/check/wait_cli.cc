// `tern wait --url URL [--timeout 600]`: for scripts and service units. Exit 0
// once /health answers 200 (or /v1/models, on servers without /health) and a
// one-token completion succeeds -- a server that is up but cannot generate is
// not ready; 1 when the time runs out (the last reason on stderr), 2 on a bad
// URL.
#include <chrono>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "check/cli.h"
#include "check/http_client.h"
#include "check/json_text.h"
#include "check/server.h"
#include "check/url.h"

namespace tern::check {
namespace {

// One generated token through /v1/completions with the served model's name.
Status GenerateOneToken(const HttpClient& http) {
  auto models = http.Get("/v1/models");
  if (!models.ok()) return models.status();
  std::string model = "default";
  const nlohmann::json m = ParseJsonLenient(models->body).value_or(nlohmann::json());
  if (m.is_object() && m.contains("data") && m["data"].is_array() && !m["data"].empty() &&
      m["data"][0].is_object() && m["data"][0].contains("id") && m["data"][0]["id"].is_string())
    model = m["data"][0]["id"].get<std::string>();
  const nlohmann::json body = {{"model", model}, {"prompt", "Hello"}, {"max_tokens", 1}, {"temperature", 0}};
  auto r = http.PostJson("/v1/completions", body.dump());
  if (!r.ok()) return r.status();
  if (r->status != 200) return Status::Errorf("a one-token completion answered HTTP {}: {}", r->status, r->body.substr(0, 200));
  return Status::Ok();
}

}  // namespace

std::function<int()> RegisterWait(CLI::App& sub) {
  struct Opts {
    std::string url = "http://127.0.0.1:30000", api_key;
    double timeout_s = 600;
  };
  auto o = std::make_shared<Opts>();
  sub.add_option("--url", o->url, "the server")->default_val(o->url);
  sub.add_option("--timeout", o->timeout_s, "seconds to wait at most")->default_val(600);
  sub.add_option("--api-key", o->api_key, "bearer token, when the server needs one");
  return [o]() {
    auto url = ParseBaseUrl(o->url);
    if (!url.ok()) {
      fmt::print(stderr, "tern wait: {}\n", url.status().message());
      return 2;
    }
    const HttpClient http(HttpOptions{.url = *url, .api_key = o->api_key, .timeout_s = 60, .connect_timeout_s = 5});
    const auto t0 = std::chrono::steady_clock::now();
    auto left = [&] {
      return o->timeout_s - std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    for (;;) {
      auto ready = WaitUntilReady(http, std::max(0.0, left()), nullptr);
      Status st = ready.ok() ? GenerateOneToken(http) : ready.status();
      if (st.ok()) {
        fmt::print(stderr, "tern wait: {} is ready ({} and a one-token completion) after {:.1f} s\n", o->url, *ready,
                   o->timeout_s - left());
        return 0;
      }
      if (left() <= 0) {
        fmt::print(stderr, "tern wait: {} not ready within {:.0f} s: {}\n", o->url, o->timeout_s, st.message());
        return 1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
  };
}

}  // namespace tern::check
