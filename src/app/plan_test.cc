// tern plan's arithmetic on a config built here, against sums written out by hand;
// tests/integration/plan_check.py checks real configs and synthetic checkpoints.
#include "app/plan.h"

#include <gtest/gtest.h>

namespace tern::app {
namespace {

// A Qwen3 like `tern synth --arch qwen3 --preset tiny`: H 64, 2 layers, 4 q / 2 KV heads of 16,
// intermediate 128, vocabulary 512, BF16, lm_head untied.
ModelConfig TinyQwen3() {
  ModelConfig c;
  c.model_type = "qwen3";
  c.torch_dtype = "bfloat16";
  c.hidden_size = 64, c.num_hidden_layers = 2, c.num_attention_heads = 4, c.num_key_value_heads = 2;
  c.head_dim = 16, c.intermediate_size = 128, c.vocab_size = 512, c.max_position_embeddings = 4096;
  return c;
}

TEST(Plan, CountsEveryTensorOfADenseModel) {
  auto p = PlanMemory(TinyQwen3(), false, PlanOptions{.tp = 1});
  ASSERT_TRUE(p.ok()) << p.status().message();
  // embedding 512*64*2; per layer: norms 2*64*2, q 64*64*2, k and v 32*64*2, o 64*64*2, q/k norms 2*16*2,
  // gate/up/down 3*128*64*2; final norm 64*2; lm_head 512*64*2.
  const int64_t layer = 256 + 8192 + 4096 + 4096 + 8192 + 64 + 49152;
  EXPECT_EQ(p->weight_bytes, 65536 + 2 * layer + 128 + 65536);
  EXPECT_EQ(p->embedding_bytes, 65536);
  EXPECT_EQ(p->kv_bytes_per_token, 2 * 2 * 2 * 16 * 2);  // K and V, 2 layers, 2 heads of 16, f16
  EXPECT_EQ(p->state_bytes_per_sequence, 0);
}

TEST(Plan, SplitsHeadsIntermediateAndVocabularyOverTp) {
  auto p = PlanMemory(TinyQwen3(), false, PlanOptions{.tp = 2, .kv_cache_dtype = "fp8_e4m3"});
  ASSERT_TRUE(p.ok()) << p.status().message();
  // per layer: norms 256, q 32 rows 4096, k/v one head 2048 each, o 32 columns 4096, q/k norms 64, MLP / 2 24576
  const int64_t layer = 256 + 4096 + 2048 + 2048 + 4096 + 64 + 24576;
  EXPECT_EQ(p->weight_bytes, 65536 + 2 * layer + 128 + 256 * 64 * 2);  // the embedding stays whole
  EXPECT_EQ(p->kv_heads_per_rank, 1);
  EXPECT_EQ(p->kv_bytes_per_token, 2 * 2 * 1 * 16 * 1);
  // More ranks than KV heads: each keeps one (replicated); 4 q heads still split.
  auto p4 = PlanMemory(TinyQwen3(), false, PlanOptions{.tp = 4});
  ASSERT_TRUE(p4.ok()) << p4.status().message();
  EXPECT_EQ(p4->kv_heads_per_rank, 1);
}

TEST(Plan, RefusesWhatTernServeWouldRefuse) {
  auto p = PlanMemory(TinyQwen3(), false, PlanOptions{.tp = 3});
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("attention heads 4 does not split into 3"), std::string::npos)
      << p.status().message();
  EXPECT_FALSE(PlanMemory(TinyQwen3(), false, PlanOptions{.tp = 2, .ep = 2}).ok());  // no experts
  ModelConfig llama = TinyQwen3();
  llama.model_type = "llama";
  EXPECT_FALSE(PlanMemory(llama, false, PlanOptions{}).ok());
}

TEST(Plan, FitsWholePagesOfKvAndTheRecurrentState) {
  MemoryPlan p;
  p.weight_bytes = 10'000;
  p.kv_bytes_per_token = 10;
  p.state_bytes_per_sequence = 100;
  // 1000 tokens -> 63 pages of 16 = 1008 tokens: 10080 + 100 bytes a request; 100000 - 10000 - 5000 free.
  RequestFit f = FitRequests(p, 100'000, 5'000, 1000, 16);
  EXPECT_EQ(f.bytes_per_request, 10'180);
  EXPECT_EQ(f.free, 85'000);
  EXPECT_EQ(f.requests, 8);
  EXPECT_EQ(FitRequests(p, 12'000, 5'000, 1000, 16).requests, 0);  // weights and reserve do not fit
  EXPECT_EQ(DefaultReserve(64'000'000'000), 3'200'000'000);
  EXPECT_EQ(DefaultReserve(16'000'000'000), 2'000'000'000);
}

TEST(Plan, ParsesSizes) {
  EXPECT_EQ(*ParseByteSize("64GB"), 64'000'000'000);
  EXPECT_EQ(*ParseByteSize("80GiB"), int64_t(80) << 30);
  EXPECT_EQ(*ParseByteSize("1.5 TB"), 1'500'000'000'000);
  EXPECT_EQ(*ParseByteSize("4096"), 4096);
  EXPECT_FALSE(ParseByteSize("GB").ok());
  EXPECT_FALSE(ParseByteSize("64 parsecs").ok());
}

}  // namespace
}  // namespace tern::app
