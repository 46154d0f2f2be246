#include "model/lockstep.h"

#include <cstring>
#include <exception>
#include <vector>

#include <fmt/format.h>

#include "dist/runtime.h"

namespace tern {
namespace {

constexpr int64_t kStop = 0, kForward = 1;  // Header::kind
constexpr int64_t kAllLogits = 1, kSkipLogits = 2;  // chunk flags

// The fixed-size first message of each step.
struct Header {
  int64_t kind = kStop;
  int64_t chunks = 0, tokens = 0, blocks = 0;
  // The KV cache the batch runs against: each rank keeps one of this shape.
  int64_t num_blocks = 0, block_size = 0, dtype = 0, state_slots = 0;
  int64_t payload_bytes = 0;
};

// Per chunk: n tokens, start_pos, n block ids, state slot, flags; then every
// chunk's tokens, then every chunk's block ids (int32).
constexpr int64_t kChunkFields = 5;

dist::Comm* g_world = nullptr;  // while a LockstepModel lives on rank 0
bool g_stopped = true;

void SendStop() {
  if (g_stopped || g_world == nullptr) return;
  g_stopped = true;
  Header h;
  g_world->Broadcast(&h, sizeof h, 0);
}

class LockstepModel final : public Model {
 public:
  LockstepModel(std::unique_ptr<Model> inner, dist::Comm& world) : inner_(std::move(inner)), world_(world) {
    g_world = &world_;
    g_stopped = false;
    dist::AtFinalize(&SendStop);
  }
  ~LockstepModel() override {
    SendStop();
    g_world = nullptr;
  }

  const ModelConfig& config() const override { return inner_->config(); }
  CacheSpec cache_spec() const override { return inner_->cache_spec(); }
  int64_t max_positions() const override { return inner_->max_positions(); }
  Status CheckBatch(std::span<const SequenceChunk> batch, const KvCache& cache) const override {
    return inner_->CheckBatch(batch, cache);
  }
  Status Forward(std::span<const SequenceChunk> batch, KvCache& cache, std::vector<float>& logits) override {
    // A batch the model refuses is refused here, before any rank runs it.
    TERN_RETURN_IF_ERROR(inner_->CheckBatch(batch, cache));
    Header h{.kind = kForward, .chunks = int64_t(batch.size()), .num_blocks = cache.num_blocks(),
             .block_size = cache.block_size(), .dtype = int64_t(cache.dtype()),
             .state_slots = cache.num_state_slots()};
    for (const SequenceChunk& c : batch) h.tokens += int64_t(c.tokens.size()), h.blocks += int64_t(c.block_table.size());
    h.payload_bytes = h.chunks * kChunkFields * 8 + (h.tokens + h.blocks) * 4;
    payload_.resize(size_t(h.payload_bytes));
    auto* fields = reinterpret_cast<int64_t*>(payload_.data());
    auto* ids = reinterpret_cast<int32_t*>(payload_.data() + h.chunks * kChunkFields * 8);
    int32_t* blocks = ids + h.tokens;
    for (const SequenceChunk& c : batch) {
      *fields++ = int64_t(c.tokens.size());
      *fields++ = c.start_pos;
      *fields++ = int64_t(c.block_table.size());
      *fields++ = c.state_slot;
      *fields++ = (c.all_logits ? kAllLogits : 0) | (c.skip_logits ? kSkipLogits : 0);
      ids = std::copy(c.tokens.begin(), c.tokens.end(), ids);
      blocks = std::copy(c.block_table.begin(), c.block_table.end(), blocks);
    }
    world_.Broadcast(&h, sizeof h, 0);
    world_.Broadcast(payload_.data(), h.payload_bytes, 0);
    // The other ranks are inside this forward's collectives now: a rank 0
    // that cannot finish it cannot bring them back to step, so the job ends.
    try {
      Status st = inner_->Forward(batch, cache, logits);
      if (st.ok()) return st;
      fmt::print(stderr, "tern: rank 0: forward failed after the other ranks began it: {}\n", st.message());
    } catch (const std::exception& e) {
      fmt::print(stderr, "tern: rank 0: forward failed after the other ranks began it: {}\n", e.what());
    }
    dist::Abort(1);
  }
  int64_t WeightBytesPerToken() const override { return inner_->WeightBytesPerToken(); }
  bool state_is_local() const override { return false; }  // each rank holds its shard of the recurrent state
  double PrefillFlopsPerToken(double context) const override { return inner_->PrefillFlopsPerToken(context); }
  int64_t WeightBytes() const override { return inner_->WeightBytes(); }
  DType weight_dtype() const override { return inner_->weight_dtype(); }
  ThreadPool& pool() override { return inner_->pool(); }
  bool HasKvCacheScales() const override { return inner_->HasKvCacheScales(); }
  // ForwardWithHidden / MtpForward: not across ranks (the base class refuses).

 private:
  std::unique_ptr<Model> inner_;
  dist::Comm& world_;
  std::vector<uint8_t> payload_;
};

}  // namespace

std::unique_ptr<Model> MakeLockstepModel(std::unique_ptr<Model> shard, dist::Comm& world) {
  return std::make_unique<LockstepModel>(std::move(shard), world);
}

Status RunWorker(Model& shard, dist::Comm& world) {
  std::unique_ptr<KvCache> cache;
  KvCacheOptions cache_opts;
  std::vector<uint8_t> payload;
  std::vector<SequenceChunk> chunks;
  std::vector<float> logits;
  for (;;) {
    Header h;
    world.Broadcast(&h, sizeof h, 0);
    if (h.kind == kStop) return Status::Ok();
    if (h.kind != kForward || h.chunks <= 0 || h.payload_bytes != h.chunks * kChunkFields * 8 + (h.tokens + h.blocks) * 4)
      return Status::Errorf("rank {}: a malformed plan from rank 0 (kind {}, {} chunks)", world.rank(), h.kind, h.chunks);
    payload.resize(size_t(h.payload_bytes));
    world.Broadcast(payload.data(), h.payload_bytes, 0);
    const KvCacheOptions want{.block_size = int32_t(h.block_size), .num_blocks = h.num_blocks,
                              .dtype = DType(h.dtype), .num_state_slots = h.state_slots};
    if (!cache || want.block_size != cache_opts.block_size || want.num_blocks != cache_opts.num_blocks ||
        want.dtype != cache_opts.dtype || want.num_state_slots != cache_opts.num_state_slots) {
      cache.reset();
      TERN_ASSIGN_OR_RETURN(cache, KvCache::Create(shard.cache_spec(), want));
      cache_opts = want;
    }
    const auto* fields = reinterpret_cast<const int64_t*>(payload.data());
    const auto* ids = reinterpret_cast<const int32_t*>(payload.data() + h.chunks * kChunkFields * 8);
    const int32_t* blocks = ids + h.tokens;
    chunks.resize(size_t(h.chunks));
    int64_t tokens_left = h.tokens, blocks_left = h.blocks;
    for (SequenceChunk& c : chunks) {
      const int64_t n = fields[0], nb = fields[2], flags = fields[4];
      if (n <= 0 || nb < 0 || n > tokens_left || nb > blocks_left)
        return Status::Errorf("rank {}: a malformed plan from rank 0 (chunk sizes)", world.rank());
      tokens_left -= n, blocks_left -= nb;
      c.tokens = {ids, size_t(n)};
      c.start_pos = fields[1];
      c.block_table = {blocks, size_t(nb)};
      c.state_slot = int32_t(fields[3]);
      c.all_logits = (flags & kAllLogits) != 0;
      c.skip_logits = (flags & kSkipLogits) != 0;
      ids += n, blocks += nb, fields += kChunkFields;
    }
    Status st = shard.Forward(chunks, *cache, logits);
    if (!st.ok()) return st.WithContext(fmt::format("rank {}: forward", world.rank()));
  }
}

}  // namespace tern
