// `tern serve`: SGLang's launch_server flags where they exist.
#include "app/commands.h"
#include "app/parallel.h"
#include "server/server.h"

namespace tern::app {

Command RegisterServe(CLI::App& app) {
  auto o = std::make_shared<server::ServeOptions>();
  app.set_config("--config", "", "read options from a TOML/INI file (key = value, names as the flags)");
  app.add_option("--model,--model-path", o->model_path, "model directory (Hugging Face layout; default: the bundled demo model)")
      ->default_val(BundledModelDir());
  app.add_option("--host", o->host, "address to listen on")->default_val("127.0.0.1");
  app.add_option("--port", o->port, "port to listen on")->default_val(30000);
  app.add_option("--served-model-name", o->served_model_name, "model name reported by the API (default: the path)");
  app.add_option("--api-key", o->api_key, "require 'Authorization: Bearer KEY' (health and metrics exempt)");
  app.add_option("--context-length", o->context_length,
                 "maximum context length (default: the model's max_position_embeddings; longer only with "
                 "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1)");
  app.add_option("--max-running-requests", o->max_running_requests, "sequences decoded together")->default_val(64);
  app.add_option("--max-queued-requests", o->max_queued_requests,
                 "waiting sequences (a request with n choices counts n) before 503 (-1: unbounded)")
      ->default_val(server::kDefaultMaxQueuedRequests);
  app.add_option("--chunked-prefill-size", o->chunked_prefill_size, "prompt tokens processed per step")->default_val(512);
  app.add_option("--kv-cache-dtype", o->kv_cache_dtype, "auto, bf16, fp16, fp32, fp8_e4m3")->default_val("auto");
  app.add_option("--max-total-tokens", o->max_total_tokens, "KV cache capacity in tokens");
  app.add_option("--kv-cache-memory-gb", o->kv_cache_memory_gb, "KV cache memory budget in GB");
  app.add_option("--page-size", o->page_size, "tokens per KV cache block")->default_val(16);
  app.add_option("--reasoning-parser", o->reasoning_parser,
                 "auto (from the chat template: qwen3 when it writes <think>), none, qwen3, qwen3-thinking, deepseek-r1")
      ->default_val("auto");
  app.add_option("--tool-call-parser", o->tool_call_parser,
                 "auto (from the chat template: qwen25 for <tool_call> JSON, qwen3_coder for <function=...>), none, "
                 "qwen25, hermes, qwen3_coder")
      ->default_val("auto");
  app.add_option("--chat-template", o->chat_template, "chat template file or text (default: the model's)");
  app.add_option("--json-whitespace", o->json_whitespace,
                 "white space in constrained JSON: compact (response_format; tool-call arguments as json.dumps "
                 "writes them), spaced (\", \" and \": \" everywhere) or any (up to 16 spaces, tabs or newlines "
                 "wherever JSON allows, xgrammar's any_whitespace)")
      ->check(CLI::IsMember({"compact", "spaced", "any"}))
      ->default_val("compact");
  app.add_option("--default-chat-template-kwargs", o->default_chat_template_kwargs,
                 "JSON object of default template variables, e.g. '{\"enable_thinking\": false}'");
  app.add_flag("--enable-metrics", o->enable_metrics, "serve Prometheus metrics at /metrics");
  app.add_flag("--disable-radix-cache", o->disable_radix_cache, "do not reuse the KV cache of shared prompt prefixes");
  app.add_flag("--enable-cache-report", o->enable_cache_report,
               "report cached prompt tokens in usage.prompt_tokens_details (OpenAI routes)");
  app.add_flag("--skip-server-warmup", o->skip_server_warmup, "report healthy without a warm-up generation");
  auto* strict = app.add_flag("--strict-weights", o->strict_weights,
                              "refuse to load weights that hold NaN or Inf (by default: a warning naming each tensor)");
  app.add_flag("--huge-pages", o->huge_pages,
               "hold the weights in huge pages: the whole checkpoint copied into anonymous memory and resident "
               "(decode streams every weight each token; each 4 KiB page costs a TLB miss); refused under mpirun");
  app.add_flag("--skip-weight-check", o->skip_weight_check,
               "do not scan the weights for NaN/Inf at load (the scan reads every weight once)")
      ->excludes(strict);
  app.add_option("--threads", o->threads, "compute threads (0: all cores)")->default_val(0);
  auto numerics = AddQuantNumericsOption(app);
  app.add_option("--log-level", o->log_level, "the server's own lines on stderr: debug, info, warning or error")
      ->default_val("info");
  app.add_option("--log-requests-format", o->log_requests_format, "request log lines: text or json")->default_val("text");
  app.add_flag("--log-requests", o->log_requests, "put prompt and completion text in request logs (see the level)");
  app.add_option("--log-requests-level", o->log_requests_level,
                 "0: metadata; 1: and sampling parameters; 2: and 2048 characters of text; 3: all text")->default_val(2);
  app.add_option("--http-read-timeout", o->http_read_timeout_s,
                 "seconds a request's line, headers and body may take to arrive")
      ->default_val(60);
  app.add_option("--http-write-timeout", o->http_write_timeout_s,
                 "seconds each write of a response may wait for the client to read")
      ->default_val(60);
  app.add_option("--max-connections", o->max_connections,
                 "client connections served at once (one thread each); more are answered 503")
      ->default_val(256);
  app.add_option("--shutdown-grace", o->shutdown_grace_s, "seconds running requests get to finish on SIGTERM")
      ->default_val(30);
  auto par = AddParallelOptions(app);
  auto spec = AddSpeculativeOptions(app);
  return [o, numerics, par, spec, &app]() {
    auto num = numerics();
    if (!num.ok()) return Fail("serve: " + num.status().message());
    auto sp = spec();
    if (!sp.ok()) return Fail("serve: " + sp.status().message());
    o->speculative = *sp;
    o->quant_numerics = *num;
    o->tp = par->tp;
    o->ep = par->ep;
    if (IsWorkerRank()) return RunShardWorker(o->model_path, server::ServedModelLoadOptions(*o));
    if (o->page_size <= 0 || o->max_running_requests <= 0 || o->chunked_prefill_size <= 0)
      return Fail("serve: --page-size, --max-running-requests and --chunked-prefill-size must be positive");
    // An empty key would silently turn authentication off.
    if (app.count("--api-key") > 0 && o->api_key.empty())
      return Fail("serve: --api-key is empty; give a key, or leave the flag out to serve without one");
    if (!(o->http_read_timeout_s > 0) || !(o->http_write_timeout_s > 0) || o->max_connections <= 0)
      return Fail("serve: --http-read-timeout, --http-write-timeout and --max-connections must be positive");
    return server::RunServer(*o);
  };
}

}  // namespace tern::app
