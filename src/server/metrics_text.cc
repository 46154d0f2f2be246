#include "server/metrics_text.h"

#include <fmt/format.h>

namespace tern::server {
namespace {

std::string EscapeLabel(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') { out += "\\n"; continue; }
    out += c;
  }
  return out;
}

class Writer {
 public:
  explicit Writer(std::string label) : label_(std::move(label)) {}
  void Counter(const char* name, const char* help, double v) { Family(name, help, "counter"); Sample(name, "", v); }
  void Gauge(const char* name, const char* help, double v) { Family(name, help, "gauge"); Sample(name, "", v); }
  void Hist(const char* name, const char* help, const Histogram::Snapshot& s) {
    Family(name, help, "histogram");
    const std::string bucket = std::string(name) + "_bucket";
    for (size_t i = 0; i < s.bounds.size(); ++i)
      Sample(bucket.c_str(), fmt::format(",le=\"{}\"", s.bounds[i]), double(s.cumulative[i]));
    Sample(bucket.c_str(), ",le=\"+Inf\"", double(s.cumulative.back()));
    Sample((std::string(name) + "_sum").c_str(), "", s.sum);
    Sample((std::string(name) + "_count").c_str(), "", double(s.count));
  }
  void Family(const char* name, const char* help, const char* type) {
    out_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  }
  void Sample(const char* name, const std::string& extra_labels, double v) {
    out_ += fmt::format("{}{{model_name=\"{}\"{}}} {}\n", name, label_, extra_labels, v);
  }
  std::string& out() { return out_; }

 private:
  std::string label_, out_;
};

}  // namespace

std::string RenderPrometheus(ServerContext& ctx) {
  const EngineMetrics& m = ctx.engine->metrics();
  Writer w(EscapeLabel(ctx.model_name));
  w.Counter("sglang:prompt_tokens_total", "Number of prefill tokens processed.", double(m.prompt_tokens_total.load()));
  w.Counter("sglang:generation_tokens_total", "Number of generation tokens processed.",
            double(m.generation_tokens_total.load()));
  w.Counter("sglang:cached_tokens_total", "Number of cached prompt tokens.", double(m.cached_tokens_total.load()));
  w.Counter("sglang:num_requests_total", "Number of requests processed.", double(m.requests_total.load()));
  w.Counter("sglang:num_aborted_requests_total", "Number of requests aborted.", double(m.aborted_requests_total.load()));
  w.Counter("sglang:num_retractions", "Number of retracted (preempted) requests.", double(m.retractions_total.load()));
  w.Counter("tern:nonfinite_logits_total", "Sequences stopped because the model produced NaN or Inf logits.",
            double(m.nonfinite_logits_total.load()));
  w.Counter("tern:engine_errors_total", "Engine steps that failed (a refused batch or an exception).",
            double(m.engine_errors_total.load()));
  w.Gauge("sglang:num_running_reqs", "The number of running requests.", double(m.running.load()));
  w.Gauge("sglang:num_queue_reqs", "The number of requests in the waiting queue.", double(m.queued.load()));
  // As SGLang, blocks the prefix cache holds for no request count as available, not used.
  const double total = double(m.total_blocks.load()), used = double(m.used_blocks.load());
  w.Gauge("sglang:num_used_tokens", "The number of KV cache token slots in use.", used * double(m.block_size.load()));
  w.Gauge("sglang:max_total_num_tokens", "KV cache capacity in tokens.", total * double(m.block_size.load()));
  w.Gauge("sglang:token_usage", "The KV cache usage (0..1).", total > 0 ? used / total : 0.0);
  w.Gauge("sglang:kv_used_blocks", "KV cache blocks held by requests.", used);
  w.Gauge("sglang:kv_cached_blocks", "KV cache blocks held only by the prefix cache (evictable).",
          double(m.cached_blocks.load()));
  w.Gauge("sglang:kv_free_blocks", "KV cache blocks free.", double(m.free_blocks.load()));
  w.Gauge("sglang:kv_total_blocks", "KV cache blocks in the pool.", total);
  w.Gauge("sglang:gen_throughput", "The generation throughput (token/s).", m.gen_throughput.load());
  const double looked_up = double(m.cache_lookup_tokens_total.load());
  w.Gauge("sglang:cache_hit_rate", "The prefix cache hit rate: prompt tokens served from the cache / prompt tokens.",
          looked_up > 0 ? double(m.cached_tokens_total.load()) / looked_up : 0.0);
  // Tokens produced per verify forward (kept drafts + the model's own token); 0 with no verify yet.
  const double verifies = double(m.spec_verifies_total.load());
  w.Gauge("sglang:spec_accept_length", "The average acceptance length of speculative decoding.",
          verifies > 0 ? (double(m.spec_accepted_tokens_total.load()) + verifies) / verifies : 0.0);
  w.Counter("tern:spec_draft_tokens_total", "Draft tokens scored by verify forwards.",
            double(m.spec_draft_tokens_total.load()));
  w.Counter("tern:spec_accepted_tokens_total", "Draft tokens kept.", double(m.spec_accepted_tokens_total.load()));
  w.Gauge("sglang:engine_load_weights_time", "Seconds spent loading the model.", ctx.load_seconds);
  w.Hist("sglang:time_to_first_token_seconds", "Histogram of time to first token in seconds.", m.ttft.Snap());
  w.Hist("sglang:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", m.itl.Snap());
  w.Hist("sglang:e2e_request_latency_seconds", "Histogram of end-to-end request latency in seconds.", m.e2e.Snap());
  w.Family("sglang:http_responses_total", "HTTP responses by status code.", "counter");
  {
    std::lock_guard lock(ctx.http_mu);
    for (const auto& [code, n] : ctx.http_responses)
      w.Sample("sglang:http_responses_total", fmt::format(",status_code=\"{}\"", code), double(n));
  }
  return std::move(w.out());
}

}  // namespace tern::server
