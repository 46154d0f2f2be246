// The server under test: is it up, what is it, which model does it serve.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "check/http_client.h"

namespace tern::check {

struct ServerInfo {
  // "sglang", "vllm", "llama.cpp", "tern" (from /v1/models owned_by), "sglang-like"
  // (has /model_info), or "openai-compatible".
  std::string dialect = "openai-compatible";
  std::string owned_by;
  std::string model;       // the id sent in requests
  std::string model_path;  // from /model_info or llama.cpp's /props, when given
  std::optional<int64_t> context_length;
  std::string context_source;  // "max_model_len of /v1/models", ...
  std::string info_endpoint;   // first of /model_info, /get_model_info, /v1/models that answered JSON
  std::string info_problem;    // why none did
  std::string ready_endpoint;  // "/health" or "/v1/models"
  std::vector<std::string> notes;
};

// One readiness probe: GET /health; a server without it (404/405/401) is asked
// GET /v1/models instead. Returns the endpoint that said ready, or an error
// describing the state ("/health answered 503 (Loading model)", "connection refused").
Result<std::string> ProbeReady(const HttpClient& http);

// Probes until ready or until wait_s is spent, every 0.5 s. `progress` gets a
// line about each failed probe (the CLI redraws or throttles it). With
// wait_s <= 0 there is one probe.
Result<std::string> WaitUntilReady(const HttpClient& http, double wait_s,
                                   const std::function<void(std::string_view line)>& progress);

// Reads /model_info (or /get_model_info), /v1/models and, for llama.cpp, /props.
// Never fails: what could not be learned is left empty and explained.
ServerInfo DiscoverServer(const HttpClient& http, const std::string& model_override);

}  // namespace tern::check
