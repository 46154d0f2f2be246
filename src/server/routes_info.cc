// /health, /model_info, /server_info, /v1/models, /metrics, /flush_cache, /abort_request.
#include <thread>

#include <fmt/format.h>

#include "api/error_json.h"
#include "kernels/cpu_features.h"
#include "server/http_util.h"
#include "server/metrics_text.h"
#include "server/routes.h"

namespace tern::server {
using nlohmann::json;

namespace {

json ModelCard(const ServerContext& ctx) {
  return {{"id", ctx.model_name}, {"object", "model"}, {"created", ctx.created}, {"owned_by", "sglang"},
          {"root", ctx.model_name}, {"parent", nullptr}, {"max_model_len", ctx.engine->context_length()}};
}

json ModelInfo(const ServerContext& ctx) {
  const ModelConfig& c = ctx.model->config();
  json preferred = nullptr;
  return {{"model_path", ctx.opts.model_path},
          {"tokenizer_path", ctx.opts.model_path},
          {"is_generation", true},
          {"preferred_sampling_params", preferred},
          {"weight_version", "default"},
          {"has_image_understanding", false},
          {"has_audio_understanding", false},
          {"model_type", c.model_type},
          {"architectures", json::array({c.model_type})},
          {"served_model_name", ctx.model_name},
          {"context_length", ctx.engine->context_length()},
          {"max_total_num_tokens", ctx.engine->max_total_tokens()}};
}

// Tokens per verify forward of speculative decoding (kept drafts + 1); 0 before any.
double AcceptLength(const EngineMetrics& m) {
  const double verifies = double(m.spec_verifies_total.load());
  return verifies > 0 ? (double(m.spec_accepted_tokens_total.load()) + verifies) / verifies : 0.0;
}

json ServerInfo(const ServerContext& ctx) {
  const ServeOptions& o = ctx.opts;
  return {{"model_path", o.model_path}, {"tokenizer_path", o.model_path}, {"host", o.host}, {"port", o.port},
          {"served_model_name", ctx.model_name}, {"context_length", ctx.engine->context_length()},
          {"max_running_requests", o.max_running_requests}, {"max_queued_requests", o.max_queued_requests},
          {"chunked_prefill_size", o.chunked_prefill_size}, {"kv_cache_dtype", o.kv_cache_dtype},
          {"page_size", o.page_size}, {"reasoning_parser", o.reasoning_parser},
          {"tool_call_parser", o.tool_call_parser}, {"enable_metrics", o.enable_metrics},
          {"skip_server_warmup", o.skip_server_warmup}, {"threads", ctx.model->pool().size()},
          {"disable_radix_cache", !ctx.engine->prefix_cache_enabled()},
          {"enable_cache_report", o.enable_cache_report}, {"radix_eviction_policy", "lru"},
          {"max_total_num_tokens", ctx.engine->max_total_tokens()},
          {"max_req_input_len", ctx.engine->max_sequence_tokens() - 1},
          {"speculative_algorithm", o.speculative.algorithm == SpeculativeAlgorithm::kNgram   ? json("NGRAM")
                                    : o.speculative.algorithm == SpeculativeAlgorithm::kNextn ? json("NEXTN")
                                                                                               : json(nullptr)},
          {"speculative_num_draft_tokens",
           o.speculative.algorithm == SpeculativeAlgorithm::kNone ? json(nullptr) : json(o.speculative.num_draft_tokens)},
          {"speculative_num_steps",
           o.speculative.algorithm == SpeculativeAlgorithm::kNextn ? json(o.speculative.num_steps) : json(nullptr)},
          {"speculative_eagle_topk",
           o.speculative.algorithm == SpeculativeAlgorithm::kNextn ? json(o.speculative.eagle_topk) : json(nullptr)},
          {"internal_states", json::array({{{"avg_spec_accept_length", AcceptLength(ctx.engine->metrics())}}})},
          // What the kernels compute (tern check --suite numerics reads "activations"): "w4a4" under
          // --quant-numerics w4a4 (quantized layers' inputs quantized as Blackwell's GEMMs do); "w4a8"
          // under --quant-numerics w4a8 (NVFP4 layers' inputs as 8-bit integers, every other activation
          // in f32: AddQuantNumericsOption); else "bf16" where prefill GEMMs round their inputs to BF16 (the amx and avx512-bf16 paths),
          // else "f32".
          {"cpu_path", kernels::CpuPathName()},
          {"activations", o.quant_numerics == ActivationNumerics::kGpuQuantized ? "w4a4"
                          : o.quant_numerics == ActivationNumerics::kInt8        ? "w4a8"
                          : kernels::UseAmx() || kernels::UseBf16Dot()           ? "bf16"
                                                                                  : "f32"},
          {"version", "tern-0.1.0"}};
}

}  // namespace

void ReplyFlushCache(ServerContext& ctx, HttpResponse& res) {
  // Empties the prefix cache; refused (400, same text, as SGLang) while requests run or wait.
  res.SetBody(ctx.engine->FlushCache() ? 200 : 400,
      "Cache flushed.\nPlease check backend logs for more details. (When there are running or waiting requests, "
      "the operation will not be performed.)\n",
      "text/plain");
}

bool ProbeEngine(ServerContext& ctx) {
  const auto start = std::chrono::steady_clock::now();
  // A busy engine proves itself by its own output; an idle one gets a 1-token probe.
  if (ctx.engine->last_output_time() > start - std::chrono::seconds(1)) return true;
  EngineRequest probe{.id = "HEALTH_CHECK_" + ctx.NewRequestId(), .prompt = {0}, .max_tokens = 1, .probe = true};
  probe.sampling.temperature = 0;
  SubmitResult sub = ctx.engine->Submit(probe);
  if (!sub.stream) return false;
  const auto deadline = start + std::chrono::milliseconds(int64_t(ctx.opts.health_check_timeout_s * 1000));
  RequestUpdate u;
  while (std::chrono::steady_clock::now() < deadline) {
    if (ctx.engine->last_output_time() > start) {
      sub.stream->Abort();
      return true;
    }
    if (sub.stream->Next(u, std::chrono::milliseconds(50)) && (!u.tokens.empty() || u.finished))
      return u.reason != FinishReason::kAbort || !u.tokens.empty();
  }
  sub.stream->Abort();
  return false;
}

void AddInfoRoutes(HttpRoutes& routes, ServerContext& ctx) {
  auto health = [&ctx](const HttpRequest&, HttpResponse& res) {
    const Health h = ctx.health.load();
    if (h != Health::kUp && h != Health::kUnhealthy) {
      res.status = 503;
      return;
    }
    const bool ok = ProbeEngine(ctx);
    ctx.health = ok ? Health::kUp : Health::kUnhealthy;
    res.status = ok ? 200 : 503;
  };
  routes.Get("/health", health);
  routes.Get("/health_generate", health);
  routes.Get("/ping", [](const HttpRequest&, HttpResponse& res) { res.status = 200; });

  auto model_info = [&ctx](const HttpRequest&, HttpResponse& res) { ReplyJson(res, 200, ModelInfo(ctx)); };
  routes.Get("/model_info", model_info);
  routes.Get("/get_model_info", model_info);
  auto server_info = [&ctx](const HttpRequest&, HttpResponse& res) { ReplyJson(res, 200, ServerInfo(ctx)); };
  routes.Get("/server_info", server_info);
  routes.Get("/get_server_info", server_info);

  routes.Get("/v1/models", [&ctx](const HttpRequest&, HttpResponse& res) {
    ReplyJson(res, 200, {{"object", "list"}, {"data", json::array({ModelCard(ctx)})}});
  });
  routes.Get(R"(/v1/models/(.+))", [&ctx](const HttpRequest& req, HttpResponse& res) {
    const std::string& id = req.path_params.at(0);
    if (id != ctx.model_name) {
      res.SetBody(404, api::ModelNotFoundBody(id), "application/json");
      return;
    }
    ReplyJson(res, 200, ModelCard(ctx));
  });

  routes.Get("/metrics", [&ctx](const HttpRequest&, HttpResponse& res) {
    if (!ctx.opts.enable_metrics) {
      res.SetBody(404, "Metrics are disabled; start the server with --enable-metrics.\n", "text/plain");
      return;
    }
    res.body = RenderPrometheus(ctx);  // status left unset, as ever (200)
    res.content_type = "text/plain; version=0.0.4; charset=utf-8";
  });

  auto flush = [&ctx](const HttpRequest&, HttpResponse& res) { ReplyFlushCache(ctx, res); };
  routes.Get("/flush_cache", flush);
  routes.Post("/flush_cache", flush);
}

}  // namespace tern::server
