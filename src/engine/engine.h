// Engine: continuous batching over a paged KV cache -- the one way tokens are
// produced: the server, `tern generate`, `tern bench` and the reference tests
// all drive it (engine/run_to_completion.h for everything but the server).
//
// One engine thread runs the loop; HTTP threads only Submit requests and read
// their RequestStreams. Each step the engine:
//   1. drops aborted requests (their KV blocks return to the pool at once),
//   2. admits waiting requests while sequence slots and KV blocks allow,
//      starting each from the longest prefix of its tokens found in the
//      prefix cache (engine/prefix_cache.h),
//   3. builds one batch: one token for every decoding sequence plus prefill
//      chunks (at most chunked_prefill_size prompt tokens per step), so a long
//      prompt never stalls the others,
//   4. runs one forward over the whole batch (weights read once per step),
//   5. records the sequences' newly filled KV blocks in the prefix cache,
//      samples, streams tokens out, and finishes sequences (their full blocks
//      stay cached until evicted for space, least recently used first).
// When the pool runs dry mid-decode, the newest running sequence is retracted:
// its blocks are freed and it goes back to the queue to be recomputed later
// (prompt + what it generated so far), never failed.
//
// Hybrid models: resuming from a cached prefix needs the recurrent state at
// its end too, so the prefix cache keeps state snapshots in pool blocks
// (PrefixCache, KvCache::SaveState) at block-aligned positions: at the end
// of each prompt (its last whole block before the last token: the prefill is
// cut there), where a prompt leaves another's cached path that has no
// snapshot (a shared system prompt), and at the end of each finished
// request's computed tokens (its prompt and reply; while decoding, the state
// at the latest block boundary is copied to the sequence's second state
// slot, and published when it finishes). Admission restores the longest
// cached prefix that has a snapshot. Each running sequence holds two state
// slots (working, boundary), three with speculative decoding.
//
// Speculative decoding (EngineOptions::speculative, engine/speculative.h): a
// decoder's step-3 chunk may carry drafts after its token; step 5 keeps the
// tokens the model samples while they equal the drafts and rolls the KV (and
// a hybrid's recurrent state) back past the first that does not.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/block_allocator.h"
#include "engine/engine_error.h"
#include "engine/metrics.h"
#include "engine/prefix_cache.h"
#include "engine/request_stream.h"
#include "engine/sampler.h"
#include "engine/speculative.h"
#include "model/kv_cache.h"
#include "model/model.h"

namespace tern {
namespace grammar {
class CompiledGrammar;  // grammar/compiled_grammar.h
class GrammarMatcher;
}  // namespace grammar

struct EngineOptions {
  int64_t max_running_requests = 64;
  int64_t max_queued_requests = -1;  // -1: unbounded
  int64_t chunked_prefill_size = 512;
  int64_t context_length = 0;        // 0: the model's max_position_embeddings
  KvCacheOptions kv;                 // num_blocks, block_size, dtype
  // Reuse the KV of cached token prefixes (SGLang's radix cache; off with
  // --disable-radix-cache). Models with recurrent state (Qwen3.5, Qwen3-Next)
  // also keep state snapshots (see Engine below); not under tensor/expert
  // parallelism, where no single process holds a sequence's whole state.
  bool enable_prefix_cache = true;
  // Speculative decoding (engine/speculative.h); off by default.
  SpeculativeOptions speculative;
  // Tests: called on the engine thread with each verify's drafts (request id,
  // the number of tokens they follow, the drafts).
  std::function<void(const std::string&, int64_t, std::span<const int32_t>)> on_drafts;
};

struct EngineRequest {
  std::string id;
  std::vector<int32_t> prompt;
  SamplingParams sampling;
  int64_t max_tokens = 16;
  std::vector<int32_t> stop_token_ids;  // finish ("stop") after sampling one of these
  int32_t top_logprobs = -1;            // -1: no logprobs; 0: chosen token only; k > 0: also the top k
  bool return_logits = false;           // each TokenOutput carries its whole logits row (reference checks)
  // A health probe (/health, /health_generate on an idle server): served like
  // any request, but kept out of the request, token and latency metrics, as
  // SGLang's health check is (log_metrics false): a load balancer probing
  // every few seconds would otherwise count thousands of one-token requests.
  bool probe = false;
  // Prompt logprobs (SGLang's input_token_logprobs, vLLM's prompt_logprobs):
  // for every prompt position p in [max(prompt_logprob_start, 1), prompt.size())
  // the logprob of prompt[p] given prompt[0, p), its rank in that row, and
  // the max(top_logprobs, 0) most likely tokens (with return_logits, the row),
  // streamed in order as RequestUpdate::prompt_logprobs before the first
  // generated token. The prefix cache is reused only up to position
  // prompt_logprob_start - 1 (cached positions have no logits, as SGLang
  // limits its radix match); at most kPromptLogitsBytes of such rows are
  // computed per step, so a long prompt costs more steps, never more memory.
  // Of the choices of one SubmitGroup only the first gets them (they are the
  // same for all). -1: none.
  int64_t prompt_logprob_start = -1;
  // Constrained decoding (structured output): every token sampled must keep
  // the output a prefix of a string of `grammar`; stop tokens are allowed
  // only where the grammar can end. Null: unconstrained.
  std::shared_ptr<const grammar::CompiledGrammar> grammar;
  // The grammar starts once the output ends with these tokens ("</think>"
  // when the reply reasons first, as SGLang's reasoner grammar does); empty:
  // from the first token.
  std::vector<int32_t> grammar_after;
};

// Bound on the logits rows of prompt logprobs computed in one engine step
// (rows x vocab x 4 bytes): 110 rows of a 151,936-token vocabulary.
inline constexpr int64_t kPromptLogitsBytes = int64_t(64) << 20;

struct SubmitResult {
  std::shared_ptr<RequestStream> stream;  // null on error
  EngineError error_kind = EngineError::kNone;
  std::string error;  // what is wrong, for the client
};

struct SubmitGroupResult {
  std::vector<std::shared_ptr<RequestStream>> streams;  // empty on error; they share one StreamNotifier
  EngineError error_kind = EngineError::kNone;
  std::string error;
};

class Engine {
 public:
  static Result<std::unique_ptr<Engine>> Create(Model& model, const EngineOptions& opts);
  // Whether Create turns the prefix cache on for this model (hybrids need the
  // whole recurrent state in this process and an attention layer's blocks for
  // snapshots), and the recurrent-state slots each running sequence then
  // holds: 0 without recurrent state, else 1, +1 with the prefix cache (the
  // boundary state), + SpecStateSlots with speculative decoding.
  static bool PrefixCacheUsable(const Model& model, const EngineOptions& opts);
  static int64_t StateSlotsPerSequence(const Model& model, const EngineOptions& opts);
  // The spare state slots speculative decoding takes per sequence (StateRollback).
  static int64_t SpecStateSlots(const SpeculativeOptions& o);
  // The KV cache's layout: the model's, plus the MTP head's layers with NEXTN.
  static CacheSpec CacheSpecFor(const Model& model, const EngineOptions& opts);
  ~Engine();

  // Queues a request; fails with kQueueFull / kDraining when the queue is full
  // or the engine is draining, kTooLong when the input cannot fit the context
  // or the cache, kInvalidInput when it cannot run as given.
  SubmitResult Submit(EngineRequest req);
  // Queues requests that share one prompt (the n choices of a request), all
  // or none. With the prefix cache the first one computes the prompt and the
  // others start once its blocks are cached, so the prompt is computed once
  // (SGLang sends a max_new_tokens=0 request first for the same effect).
  SubmitGroupResult SubmitGroup(std::vector<EngineRequest> reqs);
  // Queues independent requests at once, all or none (an error names the
  // request at fault): the loop sees them together, so an offline run's
  // schedule (admission, retraction) does not depend on thread timing.
  SubmitGroupResult SubmitBatch(std::vector<EngineRequest> reqs);
  // Empties the prefix cache when no request is queued or running (SGLang's
  // /flush_cache); false, doing nothing, otherwise.
  bool FlushCache();
  // Stops accepting, lets queued and running requests finish for up to `grace`,
  // then aborts what is left and stops the loop.
  void Drain(std::chrono::milliseconds grace);
  // Aborts every request.
  void AbortAll();

  const EngineMetrics& metrics() const { return metrics_; }
  const EngineOptions& options() const { return opts_; }
  int64_t context_length() const { return opts_.context_length; }
  int64_t max_total_tokens() const { return opts_.kv.num_blocks * opts_.kv.block_size; }
  // The tokens (prompt and reply) one sequence may reach: the context length,
  // or the KV pool's capacity where that is smaller (a reply ends there with
  // "length", as SGLang's max_req_len, instead of exhausting the pool).
  int64_t max_sequence_tokens() const { return std::min(opts_.context_length, max_total_tokens()); }
  bool prefix_cache_enabled() const { return prefix_.enabled(); }
  // Blocks one recurrent-state snapshot takes (0: no snapshots; the count held is metrics().state_snapshots).
  int64_t snapshot_blocks() const { return prefix_.state_blocks(); }
  // The KV cache's layout (the MTP head's layers included with NEXTN).
  const CacheSpec& cache_spec() const { return cache_->spec(); }
  // Time of the last step that produced output (for health probes).
  std::chrono::steady_clock::time_point last_output_time() const;

 private:
  struct Sequence;
  struct Group;
  Engine(Model& model, const EngineOptions& opts, std::unique_ptr<KvCache> cache, bool prefix_cache);
  SubmitGroupResult Enqueue(std::vector<EngineRequest> reqs, bool shared_prompt);
  void Loop();
  void Step();
  void Admit();
  bool EnsureBlocks(Sequence& s, int64_t positions);
  void Retract(Sequence& s);
  void FinishSequence(Sequence& s, FinishReason reason, int32_t matched, std::string message, EngineError error);
  // Fails every running sequence (after a step threw).
  void FailRunning(const std::string& message);
  // After Forward refused a batch: fails the sequences at fault, keeps the rest.
  void FailRefusedBatch(std::span<Sequence* const> batch_seqs, std::span<const SequenceChunk> chunks,
                        const Status& batch_error);
  // Gives back the sequence's blocks and state slots; with `publish`, first
  // keeps the state at its latest block boundary as a prefix-cache snapshot.
  void ReleaseBlocks(Sequence& s, bool publish = false);
  // Hybrid prefix cache: after a forward, the state at a block boundary is
  // published (the prompt's end) or kept in the boundary slot.
  void AfterChunk(Sequence& s);
  // Room a snapshot must leave: the most blocks any running sequence may
  // still take to reach its max_tokens (or the context), plus one spare per
  // running sequence. Every snapshot is evictable, also on a running
  // sequence's path (prefix_cache.h), so none can keep a sequence from
  // finishing; this keeps the engine from saving a state that the running
  // sequences' next blocks would evict again at once.
  int64_t BlocksStillNeeded() const;
  bool snapshots() const { return prefix_.enabled() && prefix_.state_blocks() > 0; }
  bool speculative() const { return opts_.speculative.algorithm != SpeculativeAlgorithm::kNone; }
  bool nextn() const { return opts_.speculative.algorithm == SpeculativeAlgorithm::kNextn; }
  bool per_token_rollback() const {
    return speculative() && opts_.speculative.state_rollback == StateRollback::kPerToken;
  }
  // NEXTN, after a forward's tokens are sampled (engine_mtp.cc): the MTP head
  // over each live sequence's kept rows of this step (their hidden states from
  // the forward, the tokens after them), filling its KV cache; for a sequence
  // that sampled a token, the head's argmax is its first draft and up to
  // num_steps - 1 chained head steps give the rest (s.mtp_drafts).
  // tokens_before: each sequence's token count before sampling.
  void MtpRound(const std::vector<Sequence*>& seqs, const std::vector<SequenceChunk>& chunks,
                const std::vector<int64_t>& tokens_before);
  // Speculative decoding (engine_speculative.cc). Draft: proposes drafts for a
  // decoder that has blocks for its tokens; fills s.verify / s.drafts when
  // there are some (and blocks for them) and returns the chunk's length
  // (uncached tokens + drafts). AcceptDrafts: after the verify forward (rows:
  // one logits row per chunk token), emits the model's tokens while they
  // match the drafts, rolls the cache back past the first mismatch; true when
  // the sequence finished.
  int64_t Draft(Sequence& s);
  bool AcceptDrafts(Sequence& s, float* rows, std::chrono::steady_clock::time_point now, int64_t& produced);
  // Samples a token from one logits row (grammar mask, NaN guard, sampler),
  // streams it and applies the stop conditions; true when the sequence finished.
  bool SampleAndEmit(Sequence& s, std::span<float> logits, std::chrono::steady_clock::time_point now,
                     int64_t& produced, int32_t& tok);
  void UpdateGauges();
  void MaybeFlush();
  // Streams the prompt logprobs that the rows of a chunk ([n, vocab] from
  // rows, positions start_pos..start_pos+n) owe; false, having finished the
  // sequence with an error, when a row is not finite.
  bool EmitPromptLogprobs(Sequence& s, int64_t start_pos, int64_t n, const float* rows);
  // Sets the logits of tokens the sequence's grammar forbids to -inf; false when none is allowed.
  bool MaskByGrammar(Sequence& s, std::span<float> logits);

  Model& model_;
  EngineOptions opts_;
  std::unique_ptr<KvCache> cache_;
  BlockAllocator blocks_;
  PrefixCache prefix_;  // after blocks_: it gives its references back on destruction
  std::vector<int32_t> free_state_slots_;  // recurrent-state slots not held by a running sequence
  EngineMetrics metrics_;

  std::mutex flush_mu_;  // one FlushCache at a time
  std::mutex mu_;  // guards incoming_, draining_, stop_, flush_state_
  std::condition_variable cv_;
  std::deque<std::unique_ptr<Sequence>> incoming_;
  bool draining_ = false, stop_ = false, abort_all_ = false;
  int flush_state_ = 0;  // 1: requested; 2: done; 3: refused (busy)
  std::atomic<int64_t> pending_count_{0};  // incoming + waiting + running

  // Engine-thread state.
  std::deque<std::unique_ptr<Sequence>> waiting_;
  std::vector<std::unique_ptr<Sequence>> running_;
  std::vector<float> logits_;
  std::vector<uint64_t> grammar_mask_;  // scratch: one sequence's allowed tokens
  std::vector<int32_t> draft_;  // scratch: one sequence's drafts
  // NEXTN scratch: the forward's hidden rows [T, H]; the head's input rows,
  // chunks, logits and normed last rows.
  std::vector<float> hidden_, mtp_hidden_, mtp_logits_, mtp_last_;
  // NEXTN with a token map: lm_head's rows of its ids (Model::MakeDraftHead); null: the whole vocabulary.
  std::shared_ptr<const DraftHead> draft_head_;
  std::vector<SequenceChunk> mtp_chunks_;
  bool mtp_error_logged_ = false;
  std::atomic<int64_t> last_output_ns_{0};
  std::thread thread_;
};

}  // namespace tern
