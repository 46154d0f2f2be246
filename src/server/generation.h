// GenerationRun: one request's trip through the engine as text — submits the
// tokens, detokenizes the stream (never splitting a UTF-8 character), applies
// stop strings (holding back what may still become one), and reports SGLang's
// finish reason. Handlers for every endpoint build on it.
#pragma once

#include <chrono>
#include <functional>

#include <httplib.h>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/api_error.h"
#include "api/responses.h"
#include "api/sampling.h"
#include "engine/stop_strings.h"
#include "server/context.h"
#include "tokenize/stream_decoder.h"

namespace tern::server {

struct RunSpec {
  std::string id;
  std::vector<int32_t> prompt;
  api::SamplingParams sampling;  // resolved (defaults applied, ranges checked)
  int32_t top_logprobs = -1;     // -1: none; 0: chosen token; k: top k too
};

class GenerationRun {
 public:
  // Submits to the engine; an ApiError (400 context, 503 queue full) when it refuses.
  static api::ApiResult<std::unique_ptr<GenerationRun>> Start(ServerContext& ctx, RunSpec spec);
  ~GenerationRun();

  struct Step {
    std::string text;                 // new, final text (stop strings cut)
    std::vector<TokenOutput> tokens;  // new tokens
    bool finished = false;
    api::FinishReason finish;         // when finished
  };
  // Waits up to `timeout` for news; false on timeout.
  bool Next(Step& out, std::chrono::milliseconds timeout);
  // Runs to the end, collecting everything (non-stream replies); stops early if
  // `keep_going` returns false (client gone).
  Step RunToEnd();
  void Abort();

  int64_t prompt_tokens() const { return int64_t(spec_.prompt.size()); }
  int64_t completion_tokens() const { return completion_tokens_; }
  const std::vector<int32_t>& output_ids() const { return output_ids_; }
  double elapsed_seconds() const;

 private:
  GenerationRun(ServerContext& ctx, RunSpec spec, std::shared_ptr<RequestStream> stream);

  ServerContext& ctx_;
  RunSpec spec_;
  std::shared_ptr<RequestStream> stream_;
  StreamDecoder decoder_;
  StopStringMatcher stops_;
  std::vector<int32_t> output_ids_;
  int64_t completion_tokens_ = 0;
  bool done_ = false;
  std::chrono::steady_clock::time_point start_;
};

// Streams a run as SSE: on_start writes the opening chunks, on_step each step's
// chunks; "data: [DONE]" closes the stream. A client that vanishes aborts the run
// (its KV blocks return to the pool within one engine step).
using StepWriter = std::function<void(const GenerationRun::Step&, httplib::DataSink&)>;
using StartWriter = std::function<void(httplib::DataSink&)>;
void StreamRun(httplib::Response& res, std::shared_ptr<GenerationRun> run, StepWriter on_step, StartWriter on_start);

// The engine's sampling parameters for a resolved API request.
SamplingParams ToEngineSampling(const api::SamplingParams& s);

}  // namespace tern::server
