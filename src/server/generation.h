// GenerationRun: one choice's trip through the engine as text — submits the
// tokens, detokenizes the stream (never splitting a UTF-8 character), applies
// stop strings (holding back what may still become one), and reports SGLang's
// finish reason. Handlers for every endpoint build on it; a request with
// n > 1 is n runs started together (StartGroup).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/api_error.h"
#include "api/responses.h"
#include "api/sampling.h"
#include "engine/stop_strings.h"
#include "server/context.h"
#include "server/http_types.h"
#include "tokenize/stream_decoder.h"

namespace tern::server {

struct RunSpec {
  std::string id;  // the request's id: /abort_request with it aborts every choice
  std::vector<int32_t> prompt;
  api::SamplingParams sampling;  // resolved (defaults applied, ranges checked)
  int32_t top_logprobs = -1;     // -1: none; 0: chosen token; k: top k too
  // Score the prompt from this position on (EngineRequest::prompt_logprob_start,
  // top_logprobs alternatives); the first choice's Steps carry them. -1: no.
  int64_t prompt_logprob_start = -1;
  // Special tokens whose text joins the reply even with skip_special_tokens:
  // the parser tags that are special in this tokenizer (KeptParserTagIds).
  std::vector<int32_t> keep_special_ids;
  // Structured output (sampling.constraint) starts once the output ends with
  // these tokens: "</think>" when the reply starts inside reasoning.
  std::vector<int32_t> grammar_after;
};

// The ids of the tags (api::ChatParserTags) that are special tokens of the
// tokenizer; tags that are ordinary tokens or not single tokens need nothing.
std::vector<int32_t> KeptParserTagIds(const Tokenizer& tokenizer, const std::vector<std::string>& tags);

class GenerationRun {
 public:
  // Submits to the engine; an ApiError (400 context, 503 queue full) when it
  // refuses. The n choices of one request: spec.sampling.n runs over the same prompt,
  // choice i seeded with seed + i when a seed is given (vLLM's rule; SGLang
  // would give every choice the same seed and so the same text). The engine
  // computes the shared prompt once.
  static api::ApiResult<std::vector<std::shared_ptr<GenerationRun>>> StartGroup(ServerContext& ctx, RunSpec spec);
  ~GenerationRun();

  struct Step {
    std::string text;                 // new, final text (stop strings cut)
    std::vector<TokenOutput> tokens;  // new tokens
    std::vector<TokenOutput> prompt_logprobs;  // new prompt positions scored (RunSpec::prompt_logprob_start)
    bool finished = false;
    api::FinishReason finish;         // when finished
  };
  // Waits up to `timeout` for news; false on timeout.
  bool Next(Step& out, std::chrono::milliseconds timeout);
  // Runs to the end, collecting everything (non-stream replies). `keep_going`
  // is asked every 100 ms; once it says false (the client hung up:
  // HttpRequest::ClientConnected) the run is aborted, its KV blocks go back
  // within one engine step, and the step returned is an abort.
  Step RunToEnd(const std::function<bool()>& keep_going);
  void Abort();

  int64_t prompt_tokens() const { return int64_t(spec_.prompt.size()); }
  int64_t completion_tokens() const { return completion_tokens_; }
  // Prompt tokens served from the prefix cache (known once finished).
  int64_t cached_tokens() const { return cached_tokens_; }
  const std::shared_ptr<StreamNotifier>& notifier() const { return stream_->notifier(); }
  const std::vector<int32_t>& output_ids() const { return output_ids_; }
  double elapsed_seconds() const;

 private:
  GenerationRun(ServerContext& ctx, RunSpec spec, std::vector<int32_t> stop_ids,
                std::shared_ptr<RequestStream> stream);

  // Whether a generated token's text joins the reply. Every endpoint and
  // parser configuration builds its text here, by one rule: the token that
  // matched a stop token id (end of turn, end of text, stop_token_ids) is
  // trimmed unless no_stop_trim, as SGLang's detokenizer trims it
  // (trim_matched_stop); other special tokens are dropped with
  // skip_special_tokens unless listed in keep_special_ids.
  bool JoinsText(int32_t id) const;

  ServerContext& ctx_;
  RunSpec spec_;
  std::vector<int32_t> stop_ids_;  // the engine's stop token ids for this run
  std::shared_ptr<RequestStream> stream_;
  StreamDecoder decoder_;
  StopStringMatcher stops_;
  std::vector<int32_t> output_ids_;
  int64_t completion_tokens_ = 0;
  int64_t cached_tokens_ = 0;
  bool done_ = false;
  std::chrono::steady_clock::time_point start_;
};

// Streams the runs of one request (its choices) as SSE: on_start writes the
// opening chunks, on_step each choice's steps as they come (index = choice),
// on_end what follows the last finish (the usage chunk); "data: [DONE]"
// closes the stream. A client that vanishes aborts every run (their KV
// blocks return to the pool within one engine step).
using StepWriter = std::function<void(int index, const GenerationRun::Step&, ChunkSink&)>;
using SinkWriter = std::function<void(ChunkSink&)>;
void StreamRuns(HttpResponse& res, std::vector<std::shared_ptr<GenerationRun>> runs, StepWriter on_step,
                SinkWriter on_start, SinkWriter on_end);

// The request log's view of a generation (RequestRecord, request_log.h): the
// prompt's tokens, the response id (unless the client named the request with
// X-Request-Id), the sampling parameters at --log-requests-level >= 1 and,
// when the log keeps text, the prompt. Call before the runs start.
void RecordGeneration(RequestRecord& record, const ServerContext& ctx, const RunSpec& spec,
                      std::string_view prompt_text);
// Completion tokens so far, summed over the choices.
void RecordCompletion(RequestRecord& record, const std::vector<std::shared_ptr<GenerationRun>>& runs);

// One token's text on its own (special tokens kept), for per-token bookkeeping.
std::string TokenText(const ServerContext& ctx, int32_t id);

// Bounds the output logprobs of a request whose tokens carry `top`
// alternatives (-1: none; the engine's count, which prompt logprobs may raise):
// an explicit max_new_tokens whose replies would pass kMaxOutputLogprobEntries
// is a 400 naming `what`; without one, the replies are capped where they
// would (finish_reason "length"), as they are at the context's end.
std::optional<api::ApiError> BoundOutputLogprobs(const ServerContext& ctx, api::SamplingParams& sampling,
                                                 int64_t prompt_tokens, int64_t top, std::string_view what);

// The engine's sampling parameters for a resolved API request.
SamplingParams ToEngineSampling(const api::SamplingParams& s);

}  // namespace tern::server
