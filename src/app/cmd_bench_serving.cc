// `tern bench-serving`: a load generator for any OpenAI-compatible server, like
// SGLang's bench_serving: N streaming /v1/completions requests with C in flight,
// random token prompts of a fixed length, ignore_eos so every request produces
// exactly the asked output length. Reports requests/s, output tokens/s, time to
// first token and inter-token latency (median and p99).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <random>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "app/commands.h"
#include "base/mapped_file.h"
#include "check/http_client.h"
#include "check/sse.h"

namespace tern::app {
namespace {

struct RequestStats {
  bool ok = false;
  double ttft = -1, e2e = 0;  // ttft < 0: no chunk was timed
  std::vector<double> itl;  // gaps between content events after the first
  int64_t output_tokens = 0;
  std::string error;
};

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double idx = p * double(v.size() - 1);
  const size_t lo = size_t(idx), hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (idx - double(lo));
}

// token_timing: ask for logprobs and time every chunk that carries a token,
// also when its text is empty (random-weight checkpoints whose tokenizer
// cannot spell most of their vocabulary); otherwise, as SGLang's
// bench_serving, only chunks with text count.
// extra: fields merged into every request body (--extra-body), e.g. a response_format.
RequestStats RunOne(const check::HttpClient& client, const std::string& model, const std::vector<int32_t>& prompt,
                    int64_t output_len, bool token_timing, const nlohmann::json& extra) {
  RequestStats s;
  nlohmann::json body = {{"model", model}, {"prompt", prompt}, {"max_tokens", output_len}, {"temperature", 0},
                         {"ignore_eos", true}, {"stream", true}, {"stream_options", {{"include_usage", true}}}};
  if (token_timing) body["logprobs"] = 0;
  if (extra.is_object()) body.update(extra);
  check::SseParser parser;
  std::vector<check::SseEvent> events;
  double last = -1;
  auto reply = client.PostStream("/v1/completions", body.dump(), [&](std::string_view bytes, double t) {
    events.clear();
    parser.Feed(bytes, &events);
    for (const auto& e : events) {
      if (e.data == "[DONE]") continue;
      nlohmann::json j = nlohmann::json::parse(e.data, nullptr, false);
      if (j.is_discarded()) continue;
      if (j.contains("usage") && j["usage"].is_object() && j["usage"].contains("completion_tokens"))
        s.output_tokens = j["usage"]["completion_tokens"].get<int64_t>();
      if (!j.contains("choices") || !j["choices"].is_array() || j["choices"].empty()) continue;
      const auto& c = j["choices"][0];
      const bool has_text = c.contains("text") && c["text"].is_string() && !c["text"].get<std::string>().empty();
      const bool has_token = token_timing && c.contains("logprobs") && c["logprobs"].is_object() &&
                             c["logprobs"].contains("tokens") && c["logprobs"]["tokens"].is_array() &&
                             !c["logprobs"]["tokens"].empty();
      if (!has_text && !has_token) continue;
      if (last < 0) s.ttft = t;
      else s.itl.push_back(t - last);
      last = t;
    }
  });
  if (!reply.ok()) {
    s.error = reply.status().message();
    return s;
  }
  s.e2e = reply->elapsed_s;
  if (reply->status != 200) {
    s.error = fmt::format("HTTP {}: {}", reply->status, reply->error_body.substr(0, 200));
    return s;
  }
  if (!reply->transport_error.empty()) {
    s.error = reply->transport_error;
    return s;
  }
  s.ok = true;
  return s;
}

}  // namespace

Command RegisterBenchServing(CLI::App& app) {
  struct Opts {
    std::string url = "http://127.0.0.1:30000", model = "default", api_key, json_out, extra_body;
    int64_t concurrency = 1, requests = 16, input_len = 128, output_len = 64, vocab = 1000;
    uint64_t seed = 1;
    bool token_timing = false;
  };
  auto o = std::make_shared<Opts>();
  app.add_option("--url", o->url, "server base URL")->default_val("http://127.0.0.1:30000");
  app.add_option("--model", o->model, "model name to send")->default_val("default");
  app.add_option("--api-key", o->api_key, "bearer token");
  app.add_option("--concurrency", o->concurrency, "requests in flight")->default_val(1);
  app.add_option("--requests", o->requests, "requests in all")->default_val(16);
  app.add_option("--input-len", o->input_len, "prompt tokens per request")->default_val(128);
  app.add_option("--output-len", o->output_len, "output tokens per request")->default_val(64);
  app.add_option("--vocab", o->vocab, "prompt token ids are drawn from [10, vocab)")->default_val(1000);
  app.add_option("--seed", o->seed, "prompt seed")->default_val(1);
  app.add_option("--json", o->json_out, "also write the results as JSON to this file");
  app.add_option("--extra-body", o->extra_body,
                 "a JSON object merged into every request (e.g. '{\"response_format\": {...}}' for structured output)");
  app.add_flag("--token-timing", o->token_timing,
               "time every chunk carrying a token (asks for logprobs), not only chunks with text");
  return [o]() {
    if (o->concurrency <= 0 || o->requests <= 0 || o->input_len <= 0 || o->output_len <= 0 || o->vocab <= 10)
      return Fail("bench-serving: --concurrency, --requests, --input-len, --output-len must be positive, --vocab > 10");
    auto url = check::ParseBaseUrl(o->url);
    if (!url.ok()) return Fail(url.status().message());
    const nlohmann::json extra = o->extra_body.empty() ? nlohmann::json() : nlohmann::json::parse(o->extra_body, nullptr, false);
    if (!o->extra_body.empty() && !extra.is_object()) return Fail("bench-serving: --extra-body must be a JSON object");
    check::HttpClient client({.url = *url, .api_key = o->api_key, .timeout_s = 600});
    std::mt19937_64 rng(o->seed);
    std::vector<std::vector<int32_t>> prompts(size_t(o->requests));
    for (auto& p : prompts)
      for (int64_t i = 0; i < o->input_len; ++i) p.push_back(int32_t(10 + rng() % uint64_t(o->vocab - 10)));
    std::vector<RequestStats> stats(prompts.size());
    std::atomic<size_t> next{0};
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> workers;
    for (int64_t w = 0; w < std::min(o->concurrency, o->requests); ++w)
      workers.emplace_back([&] {
        for (size_t i; (i = next.fetch_add(1)) < prompts.size();) stats[i] = RunOne(client, o->model, prompts[i], o->output_len, o->token_timing, extra);
      });
    for (auto& t : workers) t.join();
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    int64_t ok = 0, out_tokens = 0;
    std::vector<double> ttft, itl, e2e;
    std::string first_error;
    for (const auto& s : stats) {
      if (!s.ok) {
        if (first_error.empty()) first_error = s.error;
        continue;
      }
      ++ok;
      out_tokens += s.output_tokens;
      if (s.ttft >= 0) ttft.push_back(s.ttft);
      e2e.push_back(s.e2e);
      itl.insert(itl.end(), s.itl.begin(), s.itl.end());
    }
    fmt::print("requests         {} ok, {} failed{}\n", ok, int64_t(stats.size()) - ok,
               first_error.empty() ? "" : " (first error: " + first_error + ")");
    fmt::print("concurrency      {}   input {} tokens   output {} tokens\n", o->concurrency, o->input_len, o->output_len);
    fmt::print("duration         {:.2f} s\n", wall);
    fmt::print("request rate     {:.3f} req/s\n", double(ok) / wall);
    fmt::print("output rate      {:.2f} tokens/s\n", double(out_tokens) / wall);
    if (ttft.empty()) {
      // Nothing to time: no chunk carried text (a tokenizer that cannot spell
      // the generated ids decodes them to ""). Say so rather than print zeros.
      fmt::print("TTFT, ITL        n/a: no streamed chunk carried text (--token-timing times every token)\n");
    } else {
      fmt::print("TTFT             median {:.1f} ms   p99 {:.1f} ms\n", 1e3 * Percentile(ttft, 0.5),
                 1e3 * Percentile(ttft, 0.99));
      fmt::print("ITL              median {:.1f} ms   p99 {:.1f} ms\n", 1e3 * Percentile(itl, 0.5),
                 1e3 * Percentile(itl, 0.99));
    }
    fmt::print("E2E latency      median {:.2f} s   p99 {:.2f} s\n", Percentile(e2e, 0.5), Percentile(e2e, 0.99));
    if (!o->json_out.empty()) {
      // Percentiles in ms, null when nothing was timed.
      const auto ms = [](const std::vector<double>& v, double p) {
        return v.empty() ? nlohmann::json(nullptr) : nlohmann::json(1e3 * Percentile(v, p));
      };
      nlohmann::json j = {{"url", o->url}, {"concurrency", o->concurrency}, {"requests", o->requests},
                          {"input_len", o->input_len}, {"output_len", o->output_len}, {"ok", ok},
                          {"duration_s", wall}, {"request_rate", double(ok) / wall},
                          {"output_tokens_per_s", double(out_tokens) / wall},
                          {"ttft_ms_p50", ms(ttft, 0.5)}, {"ttft_ms_p99", ms(ttft, 0.99)},
                          {"itl_ms_p50", ms(itl, 0.5)}, {"itl_ms_p99", ms(itl, 0.99)}};
      if (Status s = WriteStringToFile(o->json_out, j.dump(2) + "\n"); !s.ok()) return Fail(s.message());
    }
    return ok == int64_t(stats.size()) ? 0 : 1;
  };
}

}  // namespace tern::app
