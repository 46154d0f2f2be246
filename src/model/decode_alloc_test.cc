// The steady-state decode step allocates nothing: after warm-up, 100 decode
// forwards of a batch of sequences (every block of every architecture family:
// attention, dense and sparse FFNs, Gated DeltaNet) make no call to operator
// new. A counting global operator new is the probe. With one thread the count
// must be 0. With two, a pool worker's grow-once thread-local scratch
// (kernels/scratch.h) is first touched whenever that worker first claims a
// kind of task, which on a loaded machine may be after warm-up: a handful of
// one-time allocations, bounded by workers x scratch buffers -- while a
// per-step allocation anywhere would count at least 100.
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <new>

#include <gtest/gtest.h>

#include "model/model.h"
#include "model/synth_checkpoint.h"

// GCC sees free() on memory from `new` and warns; here both are replaced, so
// every new-ed pointer did come from malloc.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

namespace {
std::atomic<bool> g_counting{false};
std::atomic<int64_t> g_allocations{0};
}  // namespace

void* operator new(size_t n) {
  if (g_counting.load(std::memory_order_relaxed)) g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t n) { return operator new(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }

namespace tern {
namespace {

struct Family {
  const char* arch;
  const char* preset;
  size_t threads;
};

class DecodeAllocTest : public ::testing::TestWithParam<Family> {};

TEST_P(DecodeAllocTest, SteadyStateDecodeAllocatesNothing) {
  const Family f = GetParam();
  const std::string dir = ::testing::TempDir() + "/decode_alloc_" + f.arch + std::to_string(f.threads);
  std::filesystem::remove_all(dir);
  const SynthPreset* preset = nullptr;
  static const std::vector<SynthPreset> presets = SynthPresets();
  for (const SynthPreset& p : presets)
    if (p.arch == f.arch && p.name == f.preset) preset = &p;
  ASSERT_NE(preset, nullptr);
  ASSERT_TRUE(WriteSyntheticWeights(dir, {.preset = *preset, .vocab = 512, .dtype = DType::kBF16, .seed = 2,
                                          .bos_token_id = 1, .eos_token_id = 2}).ok());
  auto model = LoadModel(dir, {.threads = f.threads, .weight_check = WeightCheck::kSkip});
  ASSERT_TRUE(model.ok()) << model.status().message();
  Model& m = **model;
  constexpr int kSeqs = 3, kBlock = 16, kBlocksPerSeq = 16;
  auto cache = KvCache::Create(m.cache_spec(), {.block_size = kBlock, .num_blocks = kSeqs * kBlocksPerSeq,
                                                .dtype = DType::kBF16, .num_state_slots = kSeqs});
  ASSERT_TRUE(cache.ok()) << cache.status().message();
  std::vector<std::vector<int32_t>> tables(kSeqs), tokens(kSeqs);
  for (int s = 0; s < kSeqs; ++s) {
    for (int b = 0; b < kBlocksPerSeq; ++b) tables[size_t(s)].push_back(s * kBlocksPerSeq + b);
    for (int t = 0; t < 9 + 4 * s; ++t) tokens[size_t(s)].push_back(3 + (s * 37 + t * 11) % 500);
  }
  std::vector<float> logits;
  std::vector<SequenceChunk> batch(kSeqs);
  // Prefill each, then decode all three together.
  for (int s = 0; s < kSeqs; ++s) {
    SequenceChunk c{.tokens = tokens[size_t(s)], .start_pos = 0, .block_table = tables[size_t(s)], .state_slot = s};
    ASSERT_TRUE(m.Forward({&c, 1}, **cache, logits).ok());
  }
  std::vector<int64_t> pos(kSeqs);
  std::vector<int32_t> next(kSeqs, 7);
  for (int s = 0; s < kSeqs; ++s) pos[size_t(s)] = int64_t(tokens[size_t(s)].size());
  auto step = [&] {
    for (int s = 0; s < kSeqs; ++s) {
      batch[size_t(s)] = {.tokens = {&next[size_t(s)], 1}, .start_pos = pos[size_t(s)],
                          .block_table = tables[size_t(s)], .state_slot = s};
      ++pos[size_t(s)];
    }
    ASSERT_TRUE(m.Forward(batch, **cache, logits).ok());
    for (int s = 0; s < kSeqs; ++s) next[size_t(s)] = 3 + int32_t(pos[size_t(s)] * 13 % 500);
  };
  for (int i = 0; i < 10; ++i) step();  // warm-up: scratch reaches its size
  g_allocations = 0;
  g_counting = true;
  for (int i = 0; i < 100; ++i) step();
  g_counting = false;
  if (f.threads == 1) {
    EXPECT_EQ(g_allocations.load(), 0) << "operator new calls in 100 decode steps of " << f.arch;
  } else {
    EXPECT_LE(g_allocations.load(), 16) << "operator new calls in 100 decode steps of " << f.arch;
  }
}

INSTANTIATE_TEST_SUITE_P(Families, DecodeAllocTest,
                         ::testing::Values(Family{"qwen3", "tiny", 1}, Family{"qwen3_moe", "tiny", 1},
                                           Family{"qwen3_5_moe", "qwen3.5-tiny", 1},
                                           Family{"qwen3_next", "qwen3-next-tiny", 1}, Family{"qwen3", "tiny", 2},
                                           Family{"qwen3_moe", "tiny", 2}, Family{"qwen3_5_moe", "qwen3.5-tiny", 2},
                                           Family{"qwen3_next", "qwen3-next-tiny", 2}),
                         [](const auto& info) {
                           return std::string(info.param.arch) + "_threads" + std::to_string(info.param.threads);
                         });

}  // namespace
}  // namespace tern
