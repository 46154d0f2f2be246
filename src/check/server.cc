#include "check/server.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "check/chat.h"
#include "check/json_text.h"

namespace tern::check {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

std::string StatusLine(const HttpReply& r) {
  ApiError e = ParseApiError(r.body);
  return e.message.empty() ? fmt::format("{}", r.status) : fmt::format("{} ({})", r.status, Excerpt(e.message, 60));
}

std::optional<json> GetJson(const HttpClient& http, const char* path, std::string* problem) {
  auto r = http.Get(path);
  if (!r.ok()) {
    *problem = r.status().message();
    return std::nullopt;
  }
  if (r->status != 200) {
    *problem = fmt::format("{} answered {}", path, StatusLine(*r));
    return std::nullopt;
  }
  auto j = ParseJsonLenient(r->body);
  if (!j || !j->is_object()) {
    *problem = fmt::format("{} answered 200 but not a JSON object: '{}'", path, Excerpt(r->body, 40));
    return std::nullopt;
  }
  return j;
}

}  // namespace

Result<std::string> ProbeReady(const HttpClient& http) {
  auto h = http.Get("/health");
  if (!h.ok()) return h.status();
  if (h->status == 200) return std::string("/health");
  if (h->status == 404 || h->status == 405 || h->status == 401 || h->status == 403) {
    auto m = http.Get("/v1/models");
    if (!m.ok()) return m.status();
    if (m->status == 200) return std::string("/v1/models");
    return Status::Errorf("/health answered {}, /v1/models answered {}", h->status, StatusLine(*m));
  }
  return Status::Errorf("/health answered {}", StatusLine(*h));
}

Result<std::string> WaitUntilReady(const HttpClient& http, double wait_s,
                                   const std::function<void(std::string_view)>& progress) {
  // Probes use short timeouts, so that a blackholed address or a wedged
  // server cannot hold one probe far past the --wait budget.
  HttpOptions po = http.options();
  po.connect_timeout_s = std::min(po.connect_timeout_s, 5.0);
  po.timeout_s = std::min(po.timeout_s, 30.0);
  const HttpClient probe(po);
  const auto t0 = Clock::now();
  const auto deadline =
      t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(std::max(0.0, wait_s)));
  Status last;
  for (;;) {
    auto r = ProbeReady(probe);
    if (r.ok()) return r;
    last = r.status();
    const double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
    if (Clock::now() >= deadline || wait_s <= 0) break;
    if (progress)
      progress(fmt::format("waiting for {}: {} ({:.0f} s of {:.0f} s)", http.options().url.ToString(), last.message(),
                           elapsed, wait_s));
    auto next = std::min(deadline, Clock::now() + std::chrono::milliseconds(500));
    std::this_thread::sleep_until(next);
  }
  if (wait_s <= 0)
    return Status::Errorf("server at {} is not ready: {} (use --wait SECONDS to wait for it)",
                          http.options().url.ToString(), last.message());
  return Status::Errorf("server at {} did not become ready within {:.0f} s; last: {}", http.options().url.ToString(),
                        wait_s, last.message());
}

ServerInfo DiscoverServer(const HttpClient& http, const std::string& model_override) {
  ServerInfo s;
  std::vector<std::string> problems;
  std::string problem;
  // SGLang: /model_info (new) or /get_model_info (deprecated alias).
  for (const char* path : {"/model_info", "/get_model_info"}) {
    if (auto j = GetJson(http, path, &problem)) {
      s.info_endpoint = path;
      s.model_path = JsonString(*j, "model_path").value_or("");
      s.dialect = "sglang-like";
      break;
    }
    problems.push_back(problem);
  }
  // OpenAI: /v1/models.
  std::vector<std::string> ids;
  if (auto j = GetJson(http, "/v1/models", &problem)) {
    if (s.info_endpoint.empty()) s.info_endpoint = "/v1/models";
    const json& data = JsonField(*j, "data");
    if (data.is_array()) {
      for (const json& m : data)
        if (auto id = JsonString(m, "id")) ids.push_back(*id);
      if (!data.empty()) {
        const json& m = data[0];
        s.owned_by = JsonString(m, "owned_by").value_or("");
        if (auto n = JsonInt(m, "max_model_len")) {
          s.context_length = *n;
          s.context_source = "max_model_len of /v1/models";
        } else if (auto t = JsonInt(JsonField(m, "meta"), "n_ctx_train")) {
          s.context_length = *t;
          s.context_source = "meta.n_ctx_train of /v1/models";
        }
      }
    }
  } else {
    problems.push_back(problem);
  }
  if (s.owned_by == "sglang") s.dialect = "sglang";
  if (s.owned_by == "vllm") s.dialect = "vllm";
  if (s.owned_by == "llamacpp") s.dialect = "llama.cpp";
  if (s.owned_by == "tern") s.dialect = "tern";
  // llama.cpp: /props has the context actually allocated (n_ctx) and the file.
  if (s.dialect == "llama.cpp") {
    if (auto p = GetJson(http, "/props", &problem)) {
      if (auto n = JsonInt(JsonField(*p, "default_generation_settings"), "n_ctx")) {
        s.context_length = *n;
        s.context_source = "default_generation_settings.n_ctx of /props";
      }
      if (s.model_path.empty()) s.model_path = JsonString(*p, "model_path").value_or("");
    }
  }
  if (s.info_endpoint.empty()) s.info_problem = fmt::format("{}", fmt::join(problems, "; "));
  if (!model_override.empty()) {
    s.model = model_override;
    if (!ids.empty() && std::find(ids.begin(), ids.end(), model_override) == ids.end())
      s.notes.push_back(
          fmt::format("model '{}' is not listed by /v1/models ({})", model_override, fmt::join(ids, ", ")));
  } else if (!ids.empty()) {
    s.model = ids[0];
  } else if (!s.model_path.empty()) {
    s.model = s.model_path;
  } else {
    s.model = "default";
  }
  return s;
}

}  // namespace tern::check
