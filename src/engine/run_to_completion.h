// RunToCompletion: requests submitted to an Engine together and drained.
//
// Everything that produces tokens outside the server -- `tern generate`,
// `tern bench`, quantization's calibration run, the tests against the float64
// reference -- goes through this, so it exercises the same engine the server
// runs: continuous batching, chunked prefill, the prefix cache, retraction,
// recurrent-state slots and every KV dtype.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "engine/engine.h"

namespace tern {

struct CompletedRequest {
  std::vector<TokenOutput> tokens;
  std::vector<TokenOutput> prompt_logprobs;  // with EngineRequest::prompt_logprob_start
  FinishReason reason = FinishReason::kNone;
  int32_t matched_stop_token = -1;
  bool stopped_by_caller = false;  // on_token returned false (a stop string matched)
  std::string message;             // with kAbort: why
  std::chrono::steady_clock::time_point submitted;

  std::vector<int32_t> ids() const;
  // Submission to the first token (the prompt's forwards), and the first token
  // to the last (the decode steps), from the engine's own step times.
  double prefill_seconds() const;
  double decode_seconds() const;
};

// Called on the caller's thread for each token of request `index`, in order;
// false aborts that request (it ends with stopped_by_caller set).
using TokenObserver = std::function<bool(size_t index, const TokenOutput& token)>;

// Submits every request, then waits until all have finished. An error when a
// request is refused at submission (the others are aborted) or when one ends
// aborted by the engine (its message).
Result<std::vector<CompletedRequest>> RunToCompletion(Engine& engine, std::vector<EngineRequest> requests,
                                                      const TokenObserver& on_token = nullptr);

// Engine options for running `requests` alone, as the commands do: a KV pool
// that holds all of them at full length and 16-token pages (unless opts sets
// kv.num_blocks / kv.block_size), and a context of the model's
// max_position_embeddings (or the longest request when the config has none).
// Everything else is as `opts` says.
EngineOptions OfflineEngineOptions(const Model& model, const std::vector<EngineRequest>& requests, EngineOptions opts);

}  // namespace tern
