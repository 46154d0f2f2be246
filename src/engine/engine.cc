#include "engine/engine.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace tern {
namespace {
using Clock = std::chrono::steady_clock;
double Secs(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// log-softmax of one logits row: the chosen token's value and, if asked, the top k.
TokenOutput MakeTokenOutput(int32_t id, std::span<const float> logits, int32_t top_k) {
  TokenOutput t;
  t.id = id;
  if (top_k < 0) return t;
  float mx = -INFINITY;
  for (float v : logits) mx = std::max(mx, v);
  double sum = 0;
  for (float v : logits) sum += std::exp(double(v) - mx);
  const float lse = float(mx + std::log(sum));
  t.logprob = logits[size_t(id)] - lse;
  if (top_k > 0) {
    std::vector<int32_t> idx(logits.size());
    for (size_t i = 0; i < idx.size(); ++i) idx[i] = int32_t(i);
    const size_t k = std::min(size_t(top_k), idx.size());
    std::partial_sort(idx.begin(), idx.begin() + std::ptrdiff_t(k), idx.end(), [&](int32_t a, int32_t b) {
      return logits[size_t(a)] > logits[size_t(b)] || (logits[size_t(a)] == logits[size_t(b)] && a < b);
    });
    for (size_t i = 0; i < k; ++i) t.top.emplace_back(idx[i], logits[size_t(idx[i])] - lse);
  }
  return t;
}
}  // namespace

struct Engine::Sequence {
  EngineRequest req;
  std::shared_ptr<RequestStream> stream;
  std::vector<int32_t> tokens;  // prompt + generated: the context whose KV must be cached
  int64_t num_prompt = 0;
  int64_t num_cached = 0;  // leading tokens whose KV is in the cache
  std::vector<int32_t> blocks;
  Sampler sampler;
  Clock::time_point arrival, last_token;
  bool has_first = false;

  explicit Sequence(EngineRequest r) : req(std::move(r)), sampler(req.sampling) {}
  int64_t generated() const { return int64_t(tokens.size()) - num_prompt; }
  int64_t uncached() const { return int64_t(tokens.size()) - num_cached; }
};

Result<std::unique_ptr<Engine>> Engine::Create(Model& model, const EngineOptions& opts) {
  EngineOptions o = opts;
  if (o.context_length <= 0) o.context_length = model.config().max_position_embeddings;
  if (o.context_length <= 0) return Status::Error("engine: the context length is unknown; set --context-length");
  if (o.max_running_requests <= 0) return Status::Error("engine: max_running_requests must be positive");
  if (o.chunked_prefill_size <= 0) return Status::Error("engine: chunked_prefill_size must be positive");
  TERN_ASSIGN_OR_RETURN(auto cache, KvCache::Create(model.cache_spec(), o.kv));
  return std::unique_ptr<Engine>(new Engine(model, o, std::move(cache)));
}

Engine::Engine(Model& model, const EngineOptions& opts, std::unique_ptr<KvCache> cache)
    : model_(model), opts_(opts), cache_(std::move(cache)), blocks_(opts.kv.num_blocks) {
  metrics_.total_blocks = opts_.kv.num_blocks;
  metrics_.block_size = opts_.kv.block_size;
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
  SubmitResult r;
  const int64_t n = int64_t(req.prompt.size());
  if (n == 0) return {nullptr, 400, "The input is empty."};
  if (n >= opts_.context_length)
    return {nullptr, 400,
            fmt::format("The input ({} tokens) is longer than the model's context length ({} tokens).", n,
                        opts_.context_length)};
  if (BlocksFor(n + 1, opts_.kv.block_size) > opts_.kv.num_blocks)
    return {nullptr, 400, fmt::format("The input ({} tokens) does not fit in the KV cache ({} tokens).", n,
                                      max_total_tokens())};
  if (Status s = req.sampling.Validate(); !s.ok()) return {nullptr, 400, s.message()};
  req.max_tokens = std::min(req.max_tokens, opts_.context_length - n);
  auto seq = std::make_unique<Sequence>(std::move(req));
  seq->stream = std::make_shared<RequestStream>(seq->req.id);
  seq->tokens = seq->req.prompt;
  seq->num_prompt = n;
  seq->arrival = Clock::now();
  r.stream = seq->stream;
  {
    std::lock_guard lock(mu_);
    if (draining_ || stop_) return {nullptr, 503, "The server is shutting down."};
    // Queued = submitted but not running (the running gauge is refreshed every step).
    if (opts_.max_queued_requests >= 0 && pending_count_.load() - metrics_.running.load() >= opts_.max_queued_requests)
      return {nullptr, 503, "The request queue is full."};
    incoming_.push_back(std::move(seq));
    pending_count_++;
  }
  metrics_.requests_total++;
  metrics_.prompt_tokens_total += uint64_t(n);
  cv_.notify_all();
  return r;
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
      cv_.wait(lock, [&] { return stop_ || !incoming_.empty() || !waiting_.empty() || !running_.empty(); });
      if (stop_) {
        for (auto* q : {&incoming_, &waiting_})
          for (auto& s : *q) {
            s->stream->Finish(FinishReason::kAbort, -1, "The server is shutting down.", 503, s->num_prompt,
                              s->generated(), 0);
            pending_count_--;
          }
        for (auto& s : running_) {
          ReleaseBlocks(*s);
          s->stream->Finish(FinishReason::kAbort, -1, "The server is shutting down.", 503, s->num_prompt,
                            s->generated(), 0);
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
    }
    Step();
    UpdateGauges();
  }
}

void Engine::ReleaseBlocks(Sequence& s) {
  blocks_.ReleaseAll(s.blocks);
  s.num_cached = 0;
}

void Engine::FinishSequence(Sequence& s, FinishReason reason, int32_t matched, std::string message, int status) {
  ReleaseBlocks(s);
  if (reason == FinishReason::kAbort) metrics_.aborted_requests_total++;
  metrics_.e2e.Observe(Secs(s.arrival, Clock::now()));
  s.stream->Finish(reason, matched, std::move(message), status, s.num_prompt, s.generated(), 0);
  pending_count_--;
}

bool Engine::EnsureBlocks(Sequence& s, int64_t positions) {
  const int64_t need = BlocksFor(positions, opts_.kv.block_size) - int64_t(s.blocks.size());
  return need <= 0 || blocks_.Allocate(need, s.blocks);
}

void Engine::Retract(Sequence& s) {
  ReleaseBlocks(s);
  metrics_.retractions_total++;
}

void Engine::Admit() {
  while (!waiting_.empty() && int64_t(running_.size()) < opts_.max_running_requests) {
    Sequence& s = *waiting_.front();
    // Room for the whole context plus one token, and one spare block per running sequence.
    const int64_t need = BlocksFor(int64_t(s.tokens.size()) + 1, opts_.kv.block_size);
    const int64_t reserve = int64_t(running_.size());
    if (!running_.empty() && blocks_.num_free() < need + reserve) break;
    if (running_.empty() && blocks_.num_free() < need) break;  // cannot happen: Submit checked the pool size
    running_.push_back(std::move(waiting_.front()));
    waiting_.pop_front();
  }
}

void Engine::Step() {
  // 1. Aborted requests leave at once; their blocks return to the pool.
  auto drop_aborted = [&](auto& q) {
    for (auto it = q.begin(); it != q.end();) {
      if ((*it)->stream->aborted()) {
        FinishSequence(**it, FinishReason::kAbort, -1, "The request was aborted.", 0);
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
  auto retract_newest_other = [&](Sequence* keep) -> bool {
    for (auto it = running_.rbegin(); it != running_.rend(); ++it) {
      Sequence* victim = it->get();
      if (victim == keep) continue;
      if (std::find(batch_seqs.begin(), batch_seqs.end(), victim) != batch_seqs.end()) continue;
      Retract(*victim);
      waiting_.push_front(std::move(*it));
      running_.erase(std::next(it).base());
      return true;
    }
    return false;
  };
  for (size_t i = 0; i < running_.size(); ++i) {
    Sequence* s = running_[i].get();
    if (s->uncached() != 1) continue;
    while (!EnsureBlocks(*s, int64_t(s->tokens.size()))) {
      if (!retract_newest_other(s)) break;
    }
    if (BlocksFor(int64_t(s->tokens.size()), opts_.kv.block_size) > int64_t(s->blocks.size())) {
      // Alone and still no room: cannot happen with Submit's check, but never loop forever.
      FinishSequence(*s, FinishReason::kAbort, -1, "The KV cache is exhausted.", 500);
      running_.erase(running_.begin() + std::ptrdiff_t(i));
      --i;
      continue;
    }
    batch_seqs.push_back(s);
    batch_n.push_back(1);
  }
  int64_t budget = opts_.chunked_prefill_size;
  for (auto& up : running_) {
    Sequence* s = up.get();
    if (s->uncached() <= 1 || budget <= 0) continue;
    const int64_t n = std::min(s->uncached(), budget);
    if (!EnsureBlocks(*s, s->num_cached + n)) continue;  // wait for blocks; decoders go first
    batch_seqs.push_back(s);
    batch_n.push_back(n);
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
    chunks.push_back({.tokens = std::span<const int32_t>(s->tokens).subspan(size_t(s->num_cached), size_t(n)),
                      .start_pos = s->num_cached,
                      .block_table = s->blocks,
                      .skip_logits = s->num_cached + n < int64_t(s->tokens.size())});
  }

  // 4. One forward for the whole batch.
  const auto t0 = Clock::now();
  Status st = model_.Forward(chunks, *cache_, logits_);
  if (!st.ok()) {
    for (Sequence* s : batch_seqs) s->stream->Abort();
    for (auto it = running_.begin(); it != running_.end();) {
      if (std::find(batch_seqs.begin(), batch_seqs.end(), it->get()) != batch_seqs.end()) {
        FinishSequence(**it, FinishReason::kAbort, -1, "Internal error: " + st.message(), 500);
        it = running_.erase(it);
      } else {
        ++it;
      }
    }
    return;
  }

  // 5. Sample, stream, finish.
  const int64_t V = model_.config().vocab_size;
  const auto now = Clock::now();
  int64_t row = 0, produced = 0;
  std::vector<Sequence*> done;
  for (size_t i = 0; i < batch_seqs.size(); ++i) {
    Sequence* s = batch_seqs[i];
    s->num_cached += batch_n[i];
    if (chunks[i].skip_logits) continue;
    std::span<float> l(logits_.data() + row * V, size_t(V));
    ++row;
    TokenOutput out;
    if (s->req.top_logprobs >= 0) {
      std::vector<float> raw(l.begin(), l.end());
      const int32_t tok = s->sampler.Sample(l, s->req.prompt, std::span<const int32_t>(s->tokens).subspan(size_t(s->num_prompt)));
      out = MakeTokenOutput(tok, raw, s->req.top_logprobs);
    } else {
      out.id = s->sampler.Sample(l, s->req.prompt, std::span<const int32_t>(s->tokens).subspan(size_t(s->num_prompt)));
    }
    const int32_t tok = out.id;
    s->tokens.push_back(tok);
    ++produced;
    if (!s->has_first) {
      metrics_.ttft.Observe(Secs(s->arrival, now));
      s->has_first = true;
    } else {
      metrics_.itl.Observe(Secs(s->last_token, now));
    }
    s->last_token = now;
    s->stream->PushToken(std::move(out), s->generated());
    const bool stop_tok = std::find(s->req.stop_token_ids.begin(), s->req.stop_token_ids.end(), tok) !=
                          s->req.stop_token_ids.end();
    if (stop_tok) {
      FinishSequence(*s, FinishReason::kStop, tok, "", 0);
      done.push_back(s);
    } else if (s->generated() >= s->req.max_tokens || int64_t(s->tokens.size()) >= opts_.context_length) {
      FinishSequence(*s, FinishReason::kLength, -1, "", 0);
      done.push_back(s);
    }
  }
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

void Engine::UpdateGauges() {
  metrics_.running = int64_t(running_.size());
  metrics_.queued = int64_t(waiting_.size());
  metrics_.used_blocks = blocks_.num_blocks() - blocks_.num_free();
}

}  // namespace tern
