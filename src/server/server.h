// tern serve: an OpenAI- and SGLang-compatible HTTP server over the engine.
// The app layer fills ServeOptions from the command line and calls RunServer;
// nothing of the HTTP library or the engine's internals leaks out of here.
#pragma once

#include <cstdint>
#include <string>

#include "engine/speculative.h"
#include "model/linear.h"
#include "model/model.h"

namespace tern::server {

inline constexpr int64_t kDefaultMaxQueuedRequests = 1024;

struct ServeOptions {
  std::string model_path;
  std::string host = "127.0.0.1";
  int port = 30000;
  std::string served_model_name;  // default: model_path
  std::string api_key;
  int64_t context_length = 0;     // 0: the model's
  int64_t max_running_requests = 64;
  // Sequences (n choices count n) waiting for a slot before 503; -1: unbounded.
  int64_t max_queued_requests = kDefaultMaxQueuedRequests;
  int64_t chunked_prefill_size = 512;
  std::string kv_cache_dtype = "auto";  // auto (f32 for f32 weights, else f16) | f32 | f16 | bf16 | fp8_e4m3
  int64_t max_total_tokens = 0;     // KV cache capacity in tokens; 0: from kv_cache_memory_gb
  double kv_cache_memory_gb = 0;    // 0: a default sized to the machine
  int64_t page_size = 16;           // tokens per KV block
  // "" or "none": off; "auto": from the chat template (api/parser_detect.h),
  // resolved at load; else a parser name.
  std::string reasoning_parser;     // qwen3, qwen3-thinking, deepseek-r1
  std::string tool_call_parser;     // qwen25, hermes, qwen3_coder
  // JSON written under a constraint (response_format, json_schema, tool-call
  // arguments): "compact" ({"a":1}; tool calls keep json.dumps' ", " / ": ",
  // what chat templates show), "spaced" (that style everywhere) or "any" (up
  // to 16 spaces, tabs or newlines wherever JSON allows, xgrammar's any_whitespace).
  std::string json_whitespace = "compact";
  std::string chat_template;        // a file path, or the template text itself
  std::string default_chat_template_kwargs;  // JSON object
  bool enable_metrics = false;
  bool disable_radix_cache = false;  // no prefix cache (for hybrid models: no state snapshots either)
  bool enable_cache_report = false;  // usage.prompt_tokens_details.cached_tokens in OpenAI replies
  bool skip_server_warmup = false;
  size_t threads = 0;
  ActivationNumerics quant_numerics = ActivationNumerics::kFull;  // --quant-numerics
  bool strict_weights = false;  // --strict-weights: NaN/Inf in the weights refuse the load (else a warning)
  bool skip_weight_check = false;  // --skip-weight-check: no load-time NaN/Inf scan (it reads every weight once)
  bool huge_pages = false;  // --huge-pages: the weights copied into huge pages (LoadOptions::huge_pages)
  int tp = 1, ep = 1;  // --tp / --ep: ranks of an mpirun job (model/shard.h)
  SpeculativeOptions speculative;  // --speculative-*: off by default
  int64_t max_request_bytes = 32 << 20;  // a request body, decoded; more is 413
  double http_read_timeout_s = 60;   // a request's line, headers and body must arrive within it
  double http_write_timeout_s = 60;  // each write of a response must progress within it
  int64_t max_connections = 256;     // served at once (one worker thread each); more get 503
  double health_check_timeout_s = 20;
  double shutdown_grace_s = 30;
  std::string log_level = "info";
  // Request logs (server/request_log.h): one line per finished request.
  std::string log_requests_format = "text";  // --log-requests-format: text | json
  bool log_requests = false;                 // --log-requests: prompt and completion text too, by the level
  int log_requests_level = 2;                // --log-requests-level: SGLang's 0..3
};

// Loads the model, starts the engine and serves until SIGINT/SIGTERM, then
// drains. Returns the process exit code.
int RunServer(const ServeOptions& opts);

// How `tern serve` loads its model, on rank 0 and on every worker rank alike
// (threads, numerics, weight check, parallelism, the positions it accepts).
LoadOptions ServedModelLoadOptions(const ServeOptions& opts);

}  // namespace tern::server
