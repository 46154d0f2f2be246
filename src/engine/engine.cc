#include "engine/engine.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "engine/engine_sequence.h"
#include "engine/logprobs.h"
#include "grammar/matcher.h"

namespace tern {
namespace {
using Clock = std::chrono::steady_clock;
double Secs(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// The first id outside [0, vocab), as a client-facing message; empty when all fit.
std::string OutOfVocabulary(std::span<const int32_t> ids, int64_t vocab) {
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= vocab)
      return fmt::format("Token id {} at index {} of the input is outside the vocabulary [0, {}).", ids[i], i, vocab);
  return {};
}

}  // namespace

namespace {
// Where a hybrid sequence's next prefill chunk must end so the state at a
// block boundary can be kept: where it leaves a shared cached path (branch,
// -1: none), the prompt's last whole block before its last token, and the
// same for all its tokens (a retracted sequence's prompt + reply). Before the
// last token, because a match leaves at least one token to compute (Admit),
// so a snapshot after the whole prompt could never be resumed by a request
// with the same prompt. The nearest ahead of `from`; 0: none.
int64_t SnapshotCut(int64_t num_tokens, int64_t block) { return num_tokens > 0 ? (num_tokens - 1) / block * block : 0; }
int64_t NextSnapshotCut(int64_t from, int64_t branch, int64_t num_prompt, int64_t num_tokens, int64_t block) {
  int64_t next = 0;
  for (int64_t cut : {branch, SnapshotCut(num_prompt, block), SnapshotCut(num_tokens, block)})
    if (cut > from && (next == 0 || cut < next)) next = cut;
  return next;
}
}  // namespace

Result<std::unique_ptr<Engine>> Engine::Create(Model& model, const EngineOptions& opts) {
  EngineOptions o = opts;
  if (o.context_length <= 0) o.context_length = model.config().max_position_embeddings;
  if (o.context_length <= 0) return Status::Error("engine: the context length is unknown; set --context-length");
  // A sequence may reach context_length positions; the model must accept them
  // all, or a long reply would fail at the limit instead of finishing there.
  if (model.max_positions() > 0 && o.context_length > model.max_positions())
    return Status::Errorf("engine: the context length {} is longer than the model accepts ({} positions)",
                          o.context_length, model.max_positions());
  if (o.max_running_requests <= 0) return Status::Error("engine: max_running_requests must be positive");
  if (o.chunked_prefill_size <= 0) return Status::Error("engine: chunked_prefill_size must be positive");
  // Models with recurrent state get a state slot per running sequence, and a
  // second one (the state at its latest block boundary) with the prefix cache.
  // A cached KV prefix is only half of such a model's state: resuming after it
  // also needs the recurrent state there, kept as snapshots in pool blocks,
  // which needs the whole state in this process and an attention layer's blocks.
  // Speculative decoding on such a model takes a third (the state before a
  // verify forward, restored when a draft is rejected), or with per-token
  // rollback one per draft (the state after each), which again needs the
  // whole state in this process.
  const bool hybrid = model.cache_spec().recurrent_state_bytes > 0;
  const bool prefix_cache = PrefixCacheUsable(model, o);
  TERN_RETURN_IF_ERROR(ValidateSpeculativeOptions(o.speculative));
  if (o.speculative.algorithm != SpeculativeAlgorithm::kNone && hybrid && !model.state_is_local())
    return Status::Error(
        "speculative decoding on a model with recurrent state (Qwen3.5 / Qwen3-Next) needs the whole state in one "
        "process: not under --tp/--ep yet");
  if (o.speculative.algorithm == SpeculativeAlgorithm::kNextn && model.mtp_num_layers() == 0)
    return Status::Errorf(
        "--speculative-algorithm NEXTN drafts with the model's multi-token-prediction head, and this {} model has "
        "none (no mtp.* tensors, or mtp_num_hidden_layers 0 in config.json); NGRAM needs no head",
        model.config().model_type);
  std::shared_ptr<const DraftHead> draft_head;
  if (o.speculative.algorithm == SpeculativeAlgorithm::kNextn && !o.speculative.token_map.empty()) {
    auto d = model.MakeDraftHead(o.speculative.token_map);
    if (!d.ok()) return Status::Errorf("--speculative-token-map: {}", d.status().message());
    draft_head = std::move(*d);
  }
  o.kv.num_state_slots = StateSlotsPerSequence(model, o) * o.max_running_requests;
  TERN_ASSIGN_OR_RETURN(auto cache, KvCache::Create(CacheSpecFor(model, o), o.kv));
  auto engine = std::unique_ptr<Engine>(new Engine(model, o, std::move(cache), prefix_cache));
  engine->draft_head_ = std::move(draft_head);
  return engine;
}

CacheSpec Engine::CacheSpecFor(const Model& model, const EngineOptions& o) {
  return o.speculative.algorithm == SpeculativeAlgorithm::kNextn ? model.cache_spec_with_mtp() : model.cache_spec();
}

bool Engine::PrefixCacheUsable(const Model& model, const EngineOptions& o) {
  const CacheSpec spec = model.cache_spec();
  return o.enable_prefix_cache &&
         (spec.recurrent_state_bytes == 0 || (model.state_is_local() && spec.attention_layers > 0));
}

int64_t Engine::StateSlotsPerSequence(const Model& model, const EngineOptions& o) {
  if (model.cache_spec().recurrent_state_bytes <= 0) return 0;
  return 1 + (PrefixCacheUsable(model, o) ? 1 : 0) + SpecStateSlots(o.speculative);
}

int64_t Engine::SpecStateSlots(const SpeculativeOptions& o) {
  if (o.algorithm == SpeculativeAlgorithm::kNone) return 0;
  return o.state_rollback == StateRollback::kPerToken ? MaxDrafts(o) : 1;
}

Engine::Engine(Model& model, const EngineOptions& opts, std::unique_ptr<KvCache> cache, bool prefix_cache)
    : model_(model),
      opts_(opts),
      cache_(std::move(cache)),
      blocks_(opts.kv.num_blocks),
      prefix_(blocks_, opts.kv.block_size, prefix_cache, prefix_cache ? cache_->state_blocks() : 0) {
  opts_.enable_prefix_cache = prefix_cache;
  for (int32_t slot = int32_t(opts_.kv.num_state_slots) - 1; slot >= 0; --slot) free_state_slots_.push_back(slot);
  metrics_.total_blocks = opts_.kv.num_blocks;
  metrics_.block_size = opts_.kv.block_size;
  metrics_.free_blocks = opts_.kv.num_blocks;
  thread_ = std::thread([this] { Loop(); });
}

Engine::~Engine() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

SubmitResult Engine::Submit(EngineRequest req) {
  std::vector<EngineRequest> one;
  one.push_back(std::move(req));
  SubmitGroupResult g = SubmitGroup(std::move(one));
  if (g.streams.empty()) return {nullptr, g.error_kind, std::move(g.error)};
  return {std::move(g.streams[0]), EngineError::kNone, ""};
}

SubmitGroupResult Engine::SubmitGroup(std::vector<EngineRequest> reqs) { return Enqueue(std::move(reqs), true); }

SubmitGroupResult Engine::SubmitBatch(std::vector<EngineRequest> reqs) { return Enqueue(std::move(reqs), false); }

SubmitGroupResult Engine::Enqueue(std::vector<EngineRequest> reqs, bool shared_prompt) {
  if (reqs.empty()) return {{}, EngineError::kInvalidInput, "The request is empty."};
  auto notifier = std::make_shared<StreamNotifier>();
  // The other choices of n > 1 wait for the first's prompt: to find it cached,
  // and, where it scores the prompt for all of them (prompt logprobs), so that
  // none finishes before the scores are all out (also without the cache).
  auto group = shared_prompt && reqs.size() > 1 && (prefix_.enabled() || reqs[0].prompt_logprob_start >= 0)
                   ? std::make_shared<Group>()
                   : nullptr;
  std::vector<std::unique_ptr<Sequence>> seqs;
  uint64_t prompt_tokens = 0;
  const int64_t vocab = model_.config().vocab_size;
  for (EngineRequest& req : reqs) {
    // A batch's requests are independent: an error names the one at fault.
    auto fail = [&](EngineError kind, std::string what) {
      if (!shared_prompt && reqs.size() > 1) what = fmt::format("Request {}: {}", seqs.size(), what);
      return SubmitGroupResult{{}, kind, std::move(what)};
    };
    const int64_t n = int64_t(req.prompt.size());
    if (n == 0) return fail(EngineError::kInvalidInput, "The input is empty.");
    // Checked here, not in the forward: a bad id fails this request alone, never the batch it would join.
    if (std::string bad = OutOfVocabulary(req.prompt, vocab); !bad.empty())
      return fail(EngineError::kInvalidInput, std::move(bad));
    if (req.max_tokens < 0)
      return fail(EngineError::kInvalidInput, fmt::format("max_tokens must be >= 0, got {}.", req.max_tokens));
    if (n >= opts_.context_length)
      return fail(EngineError::kTooLong,
                  fmt::format("The input ({} tokens) is longer than the model's context length ({} tokens).", n,
                              opts_.context_length));
    if (BlocksFor(n + 1, opts_.kv.block_size) > opts_.kv.num_blocks)
      return fail(EngineError::kTooLong, fmt::format("The input ({} tokens) does not fit in the KV cache ({} tokens).",
                                                     n, max_total_tokens()));
    // (unless the caller named them: the server holds EOS back also when ignore_eos drops it from the stops)
    if (req.sampling.min_new_tokens > 0 && req.sampling.min_tokens_suppressed.empty())
      req.sampling.min_tokens_suppressed = req.stop_token_ids;
    if (Status s = req.sampling.Validate(); !s.ok()) return fail(EngineError::kInvalidInput, s.message());
    req.max_tokens = std::min(req.max_tokens, max_sequence_tokens() - n);  // >= 1 by the two checks above
    auto seq = std::make_unique<Sequence>(std::move(req));
    seq->stream = std::make_shared<RequestStream>(seq->req.id, notifier);
    seq->tokens = seq->req.prompt;
    seq->num_prompt = n;
    // Only the first choice of a group scores the prompt; they all share it.
    seq->next_prompt_lp = seq->req.prompt_logprob_start >= 0 && (seqs.empty() || !shared_prompt)
                              ? std::clamp<int64_t>(seq->req.prompt_logprob_start, 1, n)
                              : n;
    seq->arrival = Clock::now();
    seq->group = group;
    seq->leader = seqs.empty() || !group;
    prompt_tokens += uint64_t(n);
    seqs.push_back(std::move(seq));
  }
  SubmitGroupResult r;
  for (auto& s : seqs) r.streams.push_back(s->stream);
  const int64_t count = int64_t(seqs.size());
  const bool reqs_probe = seqs[0]->req.probe;
  // More at once than the queue ever takes: never admitted, however idle the server (not a 503 to retry).
  if (opts_.max_queued_requests >= 0 && count > opts_.max_queued_requests)
    return {{}, EngineError::kInvalidInput,
            fmt::format("The request asks for {} sequences at once (n or a batch); the server queues at most {} "
                        "(--max-queued-requests).",
                        count, opts_.max_queued_requests)};
  {
    std::lock_guard lock(mu_);
    if (draining_ || stop_) return {{}, EngineError::kDraining, "The server is shutting down."};
    // Queued = submitted but not running (the running gauge is refreshed every step).
    if (opts_.max_queued_requests >= 0 &&
        pending_count_.load() - metrics_.running.load() + count > opts_.max_queued_requests)
      return {{}, EngineError::kQueueFull, "The request queue is full."};
    for (auto& s : seqs) incoming_.push_back(std::move(s));
    pending_count_ += count;
  }
  if (!reqs_probe) {
    metrics_.requests_total += uint64_t(count);
    metrics_.prompt_tokens_total += prompt_tokens;
  }
  cv_.notify_all();
  return r;
}

bool Engine::FlushCache() {
  std::lock_guard serial(flush_mu_);
  std::unique_lock lock(mu_);
  if (stop_) return false;
  flush_state_ = 1;
  cv_.notify_all();
  cv_.wait(lock, [&] { return flush_state_ != 1 || stop_; });
  const bool ok = flush_state_ == 2;
  flush_state_ = 0;
  return ok;
}

// Called by the engine thread with mu_ held.
void Engine::MaybeFlush() {
  if (flush_state_ != 1) return;
  const bool idle = incoming_.empty() && waiting_.empty() && running_.empty();
  if (idle) prefix_.Flush();
  flush_state_ = idle ? 2 : 3;
  UpdateGauges();
  cv_.notify_all();
}

void Engine::Drain(std::chrono::milliseconds grace) {
  {
    std::lock_guard lock(mu_);
    draining_ = true;
  }
  const auto deadline = Clock::now() + grace;
  while (pending_count_.load() > 0 && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  AbortAll();
  while (pending_count_.load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

void Engine::AbortAll() {
  std::lock_guard lock(mu_);
  for (auto& s : incoming_) s->stream->Abort();
  abort_all_ = true;
  cv_.notify_all();
}

Clock::time_point Engine::last_output_time() const {
  return Clock::time_point(Clock::duration(last_output_ns_.load()));
}

void Engine::Loop() {
  for (;;) {
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] {
        return stop_ || flush_state_ == 1 || !incoming_.empty() || !waiting_.empty() || !running_.empty();
      });
      if (stop_) {
        for (auto* q : {&incoming_, &waiting_})
          for (auto& s : *q) {
            s->stream->Finish(FinishReason::kAbort, -1, "The server is shutting down.", EngineError::kDraining, s->num_prompt,
                              s->generated(), s->cached_tokens());
            pending_count_--;
          }
        for (auto& s : running_) {
          ReleaseBlocks(*s);
          s->stream->Finish(FinishReason::kAbort, -1, "The server is shutting down.", EngineError::kDraining, s->num_prompt,
                            s->generated(), s->cached_tokens());
          pending_count_--;
        }
        return;
      }
      while (!incoming_.empty()) {
        waiting_.push_back(std::move(incoming_.front()));
        incoming_.pop_front();
      }
      if (abort_all_) {
        for (auto& s : waiting_) s->stream->Abort();
        for (auto& s : running_) s->stream->Abort();
        abort_all_ = false;
      }
      MaybeFlush();
      if (waiting_.empty() && running_.empty()) continue;
    }
    // The exception barrier: whatever a step throws (memory exhausted, say)
    // fails the sequences it was running, whose state it may have left half
    // written, and the loop goes on serving the queue.
    try {
      Step();
    } catch (const std::exception& e) {
      FailRunning(fmt::format("Internal error in the engine step: {}", e.what()));
    } catch (...) {
      FailRunning("Internal error in the engine step.");
    }
    UpdateGauges();
  }
}

void Engine::FailRunning(const std::string& message) {
  metrics_.engine_errors_total++;
  for (auto& s : running_)
    if (!s->finished) FinishSequence(*s, FinishReason::kAbort, -1, message, EngineError::kInternal);
  running_.clear();
}

void Engine::FailRefusedBatch(std::span<Sequence* const> batch_seqs, std::span<const SequenceChunk> chunks,
                              const Status& batch_error) {
  metrics_.engine_errors_total++;
  // Forward checks the batch before computing anything, so nothing was
  // written: find the chunks at fault and fail only those; the others stay
  // running and are computed again next step.
  std::vector<std::pair<Sequence*, std::string>> faulty;
  for (size_t i = 0; i < chunks.size(); ++i)
    if (Status alone = model_.CheckBatch(chunks.subspan(i, 1), *cache_); !alone.ok())
      faulty.emplace_back(batch_seqs[i], alone.message());
  if (faulty.empty())  // a fault of the batch as a whole: nothing tells which sequence, so all of it fails
    for (Sequence* s : batch_seqs) faulty.emplace_back(s, batch_error.message());
  // The survivors' drafts were not verified: they draft again next step (a
  // verify chunk exists only between Draft and AcceptDrafts of one step).
  // Before the erasing below, which frees the failed sequences.
  for (Sequence* s : batch_seqs) {
    s->verify.clear();
    s->drafts = 0;
  }
  for (auto& [seq, why] : faulty) {
    Sequence* const s = seq;  // (a structured binding cannot be captured before C++20's relaxation, clang 14)
    FinishSequence(*s, FinishReason::kAbort, -1, "Internal error: " + why, EngineError::kInternal);
    running_.erase(std::find_if(running_.begin(), running_.end(), [&](const auto& p) { return p.get() == s; }));
  }
}

void Engine::ReleaseBlocks(Sequence& s, bool publish) {
  if (publish && snapshots() && s.boundary_pos > s.snapshot_pos) {
    // The state at the last block boundary it computed (the end of its prompt
    // and reply, in whole blocks), kept while its path is still held.
    std::vector<int32_t> blocks;
    if (prefix_.AddSnapshot(s.cursor, s.boundary_pos / opts_.kv.block_size, BlocksStillNeeded(), blocks))
      cache_->SaveState(s.boundary_slot, blocks);
  }
  prefix_.Release(s.blocks, s.cursor);
  s.num_cached = 0;
  s.verify.clear();  // (drafts not yet verified: a retracted sequence restarts as a prefill)
  s.drafts = 0;
  for (int32_t* slot : {&s.state_slot, &s.boundary_slot, &s.spec_slot})
    if (*slot >= 0) {  // (a retracted sequence restarts from a snapshot or position 0)
      free_state_slots_.push_back(*slot);
      *slot = -1;
    }
  free_state_slots_.insert(free_state_slots_.end(), s.step_slots.begin(), s.step_slots.end());
  s.step_slots.clear();
  // A leader that leaves before its prompt is cached must not hold its
  // followers back, unless it was retracted while it still scores the prompt
  // for all of them: they wait for those scores (it comes back and finishes).
  if (s.group && s.leader && (s.finished || !s.wants_prompt_logits())) s.group->prompt_ready = true;
}

int64_t Engine::BlocksStillNeeded() const {
  int64_t most = 0;
  for (const auto& up : running_) {
    const Sequence& r = *up;
    if (r.finished) continue;
    // Positions it may still write: its last token is never fed back, so
    // prompt + max_tokens is one to spare (max_tokens fits max_sequence_tokens).
    const int64_t end = std::min(max_sequence_tokens(), r.num_prompt + std::max<int64_t>(r.req.max_tokens, 0));
    most = std::max<int64_t>(most, BlocksFor(end, opts_.kv.block_size) - int64_t(r.blocks.size()));
  }
  return most + int64_t(running_.size());
}

void Engine::AfterChunk(Sequence& s) {
  const int64_t bs = opts_.kv.block_size, pos = s.num_cached;
  if (pos % bs != 0 || pos <= std::max(s.snapshot_pos, s.boundary_pos)) return;
  if (pos == SnapshotCut(s.num_prompt, bs) || pos == s.branch_pos) {
    // The prompt's last whole block, or where it leaves a shared cached path:
    // published now, so requests sharing the prompt (the other choices of n >
    // 1, the next turn) or the path (a common system prompt) find it at once.
    std::vector<int32_t> blocks;
    if (prefix_.AddSnapshot(s.cursor, pos / bs, BlocksStillNeeded(), blocks)) {
      cache_->SaveState(s.state_slot, blocks);
      s.snapshot_pos = pos;
      return;
    }
  }
  cache_->CopyState(s.state_slot, s.boundary_slot);
  s.boundary_pos = pos;
}

void Engine::FinishSequence(Sequence& s, FinishReason reason, int32_t matched, std::string message, EngineError error) {
  if (s.finished) return;
  s.finished = true;
  // A sequence that ended normally or was aborted by its client leaves its
  // state to the prefix cache; one that failed may have left it half written.
  ReleaseBlocks(s, error == EngineError::kNone);
  if (!s.req.probe) {
    if (reason == FinishReason::kAbort) metrics_.aborted_requests_total++;
    metrics_.e2e.Observe(Secs(s.arrival, Clock::now()));
  }
  s.stream->Finish(reason, matched, std::move(message), error, s.num_prompt, s.generated(), s.cached_tokens());
  pending_count_--;
}

bool Engine::EnsureBlocks(Sequence& s, int64_t positions) {
  const int64_t need = BlocksFor(positions, opts_.kv.block_size) - int64_t(s.blocks.size());
  return need <= 0 || prefix_.Allocate(need, s.blocks);
}

void Engine::Retract(Sequence& s) {
  ReleaseBlocks(s);
  metrics_.retractions_total++;
}

void Engine::Admit() {
  for (size_t i = 0; i < waiting_.size() && int64_t(running_.size()) < opts_.max_running_requests;) {
    Sequence& s = *waiting_[i];
    if (s.waits_for_leader()) {  // its prompt will be in the cache soon
      ++i;
      continue;
    }
    // The longest cached prefix, leaving at least one token to compute (its
    // logits are needed), and every position whose prompt logprobs are still owed.
    std::vector<int32_t> blocks;
    PrefixCache::Cursor cursor;
    int64_t max_hit = int64_t(s.tokens.size()) - 1;
    if (s.wants_prompt_logits()) max_hit = std::min(max_hit, s.next_prompt_lp - 1);
    int64_t kv_hit = 0;
    const int64_t hit = prefix_.Match(s.tokens, max_hit, blocks, cursor, &kv_hit);
    // Room for the whole context plus one token, and one spare block per running sequence.
    const int64_t need = BlocksFor(int64_t(s.tokens.size()) + 1, opts_.kv.block_size) - int64_t(blocks.size());
    const int64_t reserve = int64_t(running_.size());
    if (prefix_.available() < need + reserve) {  // with nothing running this cannot happen: Submit checked the pool size
      prefix_.Release(blocks, cursor);
      break;
    }
    if (opts_.kv.num_state_slots > 0) {
      const size_t slots = 1 + (snapshots() ? 1 : 0) + size_t(SpecStateSlots(opts_.speculative));
      if (free_state_slots_.size() < slots) {
        prefix_.Release(blocks, cursor);
        break;
      }
      auto take = [&] {
        const int32_t slot = free_state_slots_.back();
        free_state_slots_.pop_back();
        return slot;
      };
      s.state_slot = take();
      if (snapshots()) s.boundary_slot = take();
      if (per_token_rollback()) {
        for (int64_t j = 0; j < MaxDrafts(opts_.speculative); ++j) s.step_slots.push_back(take());
      } else if (speculative()) {
        s.spec_slot = take();
      }
      s.boundary_pos = s.snapshot_pos = -1;
      s.branch_pos = kv_hit > hit ? kv_hit : -1;
      if (hit > 0) {  // resume from the snapshot at the end of the matched prefix
        cache_->LoadState(prefix_.SnapshotAt(cursor), s.state_slot);
        s.snapshot_pos = hit;
      }
    }
    s.blocks = std::move(blocks);
    s.cursor = cursor;
    s.num_cached = hit;
    if (s.cached_prompt < 0) {
      s.cached_prompt = std::min(hit, s.num_prompt);
      if (!s.req.probe) {
        metrics_.cache_lookup_tokens_total += uint64_t(s.num_prompt);
        metrics_.cached_tokens_total += uint64_t(s.cached_prompt);
      }
    }
    running_.push_back(std::move(waiting_[i]));
    waiting_.erase(waiting_.begin() + std::ptrdiff_t(i));
  }
}

void Engine::Step() {
  // 1. Aborted requests leave at once; their blocks return to the pool.
  auto drop_aborted = [&](auto& q) {
    for (auto it = q.begin(); it != q.end();) {
      if ((*it)->stream->aborted()) {
        FinishSequence(**it, FinishReason::kAbort, -1, "The request was aborted.", EngineError::kNone);
        it = q.erase(it);
      } else {
        ++it;
      }
    }
  };
  drop_aborted(waiting_);
  drop_aborted(running_);

  // 2. Admit.
  Admit();
  if (running_.empty()) return;

  // 3. Build the batch: decode tokens first (they must not stall), then prefill chunks.
  std::vector<Sequence*> batch_seqs;
  std::vector<int64_t> batch_n;
  std::vector<bool> batch_all_logits;  // prompt logprobs: a row for every token of the chunk
  auto find_running = [&](Sequence* s) {
    return std::find_if(running_.begin(), running_.end(), [&](const auto& p) { return p.get() == s; });
  };
  auto retract = [&](Sequence* victim) {
    auto it = find_running(victim);
    Retract(*victim);
    waiting_.push_front(std::move(*it));
    running_.erase(it);
  };
  auto retract_newest_other = [&](Sequence* keep) -> bool {
    for (auto it = running_.rbegin(); it != running_.rend(); ++it) {
      Sequence* victim = it->get();
      if (victim == keep) continue;
      if (std::find(batch_seqs.begin(), batch_seqs.end(), victim) != batch_seqs.end()) continue;
      retract(victim);
      return true;
    }
    return false;
  };
  // Decoders: one token to compute, or (speculative decoding) the few that a
  // rejected draft on a hybrid model left to recompute, plus new drafts.
  auto decodes = [&](const Sequence& s) {
    return s.uncached() == 1 ||
           (speculative() && s.num_cached >= s.num_prompt && s.uncached() <= 2 * (MaxDrafts(opts_.speculative) + 1));
  };
  std::vector<Sequence*> decoders;
  for (auto& up : running_)
    if (decodes(*up)) decoders.push_back(up.get());
  for (Sequence* s : decoders) {
    if (find_running(s) == running_.end()) continue;  // retracted to make room for an earlier one
    while (!EnsureBlocks(*s, int64_t(s->tokens.size()))) {
      if (!retract_newest_other(s)) break;
    }
    if (BlocksFor(int64_t(s->tokens.size()), opts_.kv.block_size) > int64_t(s->blocks.size())) {
      if (running_.size() > 1) {  // every other sequence is in this batch already: this one waits
        retract(s);
        continue;
      }
      // Alone and still no room: cannot happen with Submit's check, but never loop forever.
      FinishSequence(*s, FinishReason::kAbort, -1, "The KV cache is exhausted.", EngineError::kInternal);
      running_.erase(find_running(s));
      continue;
    }
    const int64_t n = speculative() ? Draft(*s) : 1;
    batch_seqs.push_back(s);
    batch_n.push_back(n);
    batch_all_logits.push_back(s->drafts > 0);
  }
  int64_t budget = opts_.chunked_prefill_size;
  const int64_t V = model_.config().vocab_size;
  int64_t logit_rows = std::max<int64_t>(1, kPromptLogitsBytes / (std::max<int64_t>(V, 1) * 4));
  for (auto& up : running_) {
    Sequence* s = up.get();
    if (decodes(*s) || budget <= 0) continue;
    int64_t n = std::min(s->uncached(), budget);
    bool all_logits = false;
    if (s->wants_prompt_logits()) {
      // The row at position q scores prompt[q + 1]: a chunk before the first
      // row needed is plain prefill; from there on every row is kept.
      const int64_t gap = s->next_prompt_lp - 1 - s->num_cached;
      if (gap > 0) {
        n = std::min(n, gap);
      } else {
        n = std::min(n, logit_rows);
        if (n <= 0) continue;  // this step's rows are spent: the next step
        all_logits = true;
      }
    }
    if (snapshots())
      if (const int64_t cut = NextSnapshotCut(s->num_cached, s->branch_pos, s->num_prompt,
                                              int64_t(s->tokens.size()), opts_.kv.block_size);
          cut > 0 && cut < s->num_cached + n)
        n = cut - s->num_cached;
    if (!EnsureBlocks(*s, s->num_cached + n)) continue;  // wait for blocks; decoders go first
    if (all_logits) logit_rows -= n;
    batch_seqs.push_back(s);
    batch_n.push_back(n);
    batch_all_logits.push_back(all_logits);
    budget -= n;
  }
  if (batch_seqs.empty()) {
    // Every running sequence is prefilling and none could get blocks: make room
    // by sending the newest back to the queue (it is recomputed later).
    if (running_.size() > 1) {
      Retract(*running_.back());
      waiting_.push_front(std::move(running_.back()));
      running_.pop_back();
    }
    return;
  }

  std::vector<SequenceChunk> chunks;
  chunks.reserve(batch_seqs.size());
  for (size_t i = 0; i < batch_seqs.size(); ++i) {
    Sequence* s = batch_seqs[i];
    const int64_t n = batch_n[i];
    const std::span<const int32_t> toks =
        s->drafts > 0 ? std::span<const int32_t>(s->verify)
                      : std::span<const int32_t>(s->tokens).subspan(size_t(s->num_cached), size_t(n));
    if (s->drafts > 0 && s->spec_slot >= 0) cache_->CopyState(s->state_slot, s->spec_slot);
    chunks.push_back({.tokens = toks,
                      .start_pos = s->num_cached,
                      .block_table = s->blocks,
                      .state_slot = s->state_slot,
                      .step_state_slots = s->drafts > 0 && !s->step_slots.empty()
                                              ? std::span<const int32_t>(s->step_slots).first(size_t(s->drafts))
                                              : std::span<const int32_t>(),
                      .all_logits = batch_all_logits[i],
                      .skip_logits = !batch_all_logits[i] && s->num_cached + n < int64_t(s->tokens.size())});
  }

  // 4. One forward for the whole batch.
  const auto t0 = Clock::now();
  Status st = nextn() ? model_.ForwardWithHidden(chunks, *cache_, logits_, hidden_)
                      : model_.Forward(chunks, *cache_, logits_);
  if (!st.ok()) {
    FailRefusedBatch(batch_seqs, chunks, st);
    return;
  }

  // 5. Sample, stream, finish.
  const auto now = Clock::now();
  int64_t row = 0, produced = 0;
  std::vector<Sequence*> done;
  std::vector<int64_t> tokens_before;  // NEXTN: which sequences sample a token below
  if (nextn())
    for (Sequence* s : batch_seqs) tokens_before.push_back(int64_t(s->tokens.size()));
  for (size_t i = 0; i < batch_seqs.size(); ++i) {
    Sequence* s = batch_seqs[i];
    if (s->drafts > 0) {  // a verify chunk: its own acceptance (engine_speculative.cc)
      const int64_t rows = batch_n[i];
      if (AcceptDrafts(*s, logits_.data() + row * V, now, produced)) done.push_back(s);
      row += rows;
      continue;
    }
    s->num_cached += batch_n[i];
    prefix_.Insert(s->tokens, s->num_cached, s->blocks, s->cursor);
    if (snapshots()) AfterChunk(*s);
    if (s->group && s->leader && s->num_cached >= s->num_prompt) s->group->prompt_ready = true;  // (also AcceptDrafts)
    const int64_t rows = chunks[i].skip_logits ? 0 : chunks[i].all_logits ? batch_n[i] : 1;
    float* const first_row = logits_.data() + row * V;
    row += rows;
    if (chunks[i].all_logits && !EmitPromptLogprobs(*s, chunks[i].start_pos, batch_n[i], first_row)) {
      done.push_back(s);  // non-finite logits: it ended with the error
      continue;
    }
    if (s->num_cached < int64_t(s->tokens.size())) continue;  // mid-prompt: nothing to sample yet
    std::span<float> l(first_row + (rows - 1) * V, size_t(V));
    int32_t tok = -1;
    if (SampleAndEmit(*s, l, now, produced, tok)) done.push_back(s);
  }
  if (nextn()) MtpRound(batch_seqs, chunks, tokens_before);
  metrics_.generation_tokens_total += uint64_t(produced);
  if (produced > 0) {
    last_output_ns_ = Clock::now().time_since_epoch().count();
    const double dt = Secs(t0, Clock::now());
    const double rate = double(produced) / std::max(dt, 1e-9);
    metrics_.gen_throughput = 0.8 * metrics_.gen_throughput.load() + 0.2 * rate;
  }
  if (!done.empty())
    running_.erase(std::remove_if(running_.begin(), running_.end(),
                                  [&](const auto& p) { return std::find(done.begin(), done.end(), p.get()) != done.end(); }),
                   running_.end());
}

bool Engine::SampleAndEmit(Sequence& s, std::span<float> l, Clock::time_point now, int64_t& produced, int32_t& tok) {
  // The NaN guard: a broken kernel or non-finite weights must not stream
  // garbage. This sequence ends with an error that says so; the others go on.
  if (!AllFinite(l)) {
    metrics_.nonfinite_logits_total++;
    FinishSequence(s, FinishReason::kAbort, -1,
                   fmt::format("The model produced non-finite logits (NaN or Inf) at position {}; generation was "
                               "stopped.",
                               s.tokens.size() - 1),
                   EngineError::kInternal);
    return true;
  }
  if (s.req.max_tokens == 0) {  // prefill only (SGLang's max_new_tokens 0: prompt logprobs, cache warm-up)
    FinishSequence(s, FinishReason::kLength, -1, "", EngineError::kNone);
    return true;
  }
  if (s.matcher && s.grammar_active && !MaskByGrammar(s, l)) {
    // No token keeps the output inside the grammar: it is complete (and no
    // stop token may end it, e.g. ignore_eos), so the sequence ends here,
    // matched by its last token as SGLang reports a terminated grammar.
    FinishSequence(s, FinishReason::kStop, s.last_generated(), "", EngineError::kNone);
    return true;
  }
  TokenOutput out;
  const auto output_so_far = std::span<const int32_t>(s.tokens).subspan(size_t(s.num_prompt));
  if (s.req.top_logprobs >= 0 || s.req.return_logits) {
    std::vector<float> raw(l.begin(), l.end());  // the sampler applies penalties in place
    const int32_t id = s.sampler.Sample(l, s.req.prompt, output_so_far);
    out = MakeTokenOutput(id, raw, s.req.top_logprobs);
    if (s.req.return_logits) out.logits = std::move(raw);
  } else {
    out.id = s.sampler.Sample(l, s.req.prompt, output_so_far);
  }
  out.time = now;
  tok = out.id;
  if (s.matcher && s.grammar_active && !s.matcher->AcceptToken(tok)) {
    // Only when the sampler itself suppressed every allowed token (min_tokens on a complete grammar).
    FinishSequence(s, FinishReason::kStop, s.last_generated(), "", EngineError::kNone);
    return true;
  }
  s.tokens.push_back(tok);
  s.MaybeStartGrammar();
  if (!s.req.probe) {
    ++produced;
    if (!s.has_first) metrics_.ttft.Observe(Secs(s.arrival, now));
    else metrics_.itl.Observe(Secs(s.last_token, now));
  }
  s.has_first = true;
  s.last_token = now;
  s.stream->PushToken(std::move(out), s.generated());
  const bool stop_tok = std::find(s.req.stop_token_ids.begin(), s.req.stop_token_ids.end(), tok) !=
                        s.req.stop_token_ids.end();
  if (stop_tok) {
    FinishSequence(s, FinishReason::kStop, tok, "", EngineError::kNone);
    return true;
  } else if (s.generated() >= s.req.max_tokens || int64_t(s.tokens.size()) >= opts_.context_length) {
    FinishSequence(s, FinishReason::kLength, -1, "", EngineError::kNone);
    return true;
  }
  return false;
}

bool Engine::EmitPromptLogprobs(Sequence& s, int64_t start_pos, int64_t n, const float* rows) {
  const int64_t V = model_.config().vocab_size;
  std::vector<TokenOutput> out;
  for (int64_t j = 0; j < n; ++j) {
    const int64_t p = start_pos + j + 1;  // the prompt position this row scores
    if (p < s.next_prompt_lp) continue;
    if (p >= s.num_prompt) break;
    std::span<const float> row(rows + j * V, size_t(V));
    if (!AllFinite(row)) {
      metrics_.nonfinite_logits_total++;
      FinishSequence(s, FinishReason::kAbort, -1,
                     fmt::format("The model produced non-finite logits (NaN or Inf) at position {} of the prompt; "
                                 "generation was stopped.",
                                 p - 1),
                     EngineError::kInternal);
      return false;
    }
    const int32_t id = s.tokens[size_t(p)];
    TokenOutput t = MakeTokenOutput(id, row, std::max<int32_t>(s.req.top_logprobs, 0));
    t.rank = RankOf(row, id);
    if (s.req.return_logits) t.logits.assign(row.begin(), row.end());
    out.push_back(std::move(t));
    s.next_prompt_lp = p + 1;
  }
  s.stream->PushPromptLogprobs(std::move(out));
  return true;
}

bool Engine::MaskByGrammar(Sequence& s, std::span<float> logits) {
  grammar_mask_.resize(s.matcher->grammar().vocab().mask_words());
  s.matcher->FillNextTokenMask(grammar_mask_);
  bool any = false;
  for (size_t w = 0; w * 64 < logits.size(); ++w) {  // a word at a time: most are all allowed or all not
    uint64_t bits = w < grammar_mask_.size() ? grammar_mask_[w] : 0;
    const size_t end = std::min(logits.size(), w * 64 + 64);
    if (end - w * 64 < 64) bits &= (uint64_t(1) << (end - w * 64)) - 1;  // ids past the logits row
    any = any || bits != 0;
    if (bits == ~uint64_t(0)) continue;
    for (size_t i = w * 64; i < end; ++i)
      if (!((bits >> (i & 63)) & 1)) logits[i] = -INFINITY;
  }
  return any;
}

void Engine::UpdateGauges() {
  metrics_.running = int64_t(running_.size());
  metrics_.queued = int64_t(waiting_.size());
  metrics_.free_blocks = blocks_.num_free();
  metrics_.cached_blocks = prefix_.evictable();
  metrics_.used_blocks = blocks_.num_blocks() - blocks_.num_free() - prefix_.evictable();
  metrics_.state_snapshots = prefix_.snapshots();
}

}  // namespace tern
