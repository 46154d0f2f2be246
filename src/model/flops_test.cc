// Model::PrefillFlopsPerToken against the operation count written out from the
// synthetic presets' dimensions (the Linear shapes of each architecture, not the
// loaded Linears the model sums).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "model/model.h"
#include "model/synth_checkpoint.h"

namespace tern {
namespace {

namespace fs = std::filesystem;

SynthPreset Preset(const std::string& name) {
  for (const SynthPreset& p : SynthPresets())
    if (p.name == name) return p;
  ADD_FAILURE() << "no preset " << name;
  return {};
}

double LoadedFlops(const SynthPreset& p, double context) {
  const fs::path dir = fs::temp_directory_path() / ("tern_flops_test_" + p.name + "_" + std::to_string(::getpid()));
  Status s = WriteSyntheticWeights(dir.string(), {.preset = p, .vocab = 512, .seed = 3});
  EXPECT_TRUE(s.ok()) << s.message();
  Result<std::unique_ptr<Model>> m = LoadModel(dir.string(), {.threads = 1});
  EXPECT_TRUE(m.ok()) << m.status().message();
  const double f = m.ok() ? (*m)->PrefillFlopsPerToken(context) : 0;
  fs::remove_all(dir);
  return f;
}

TEST(PrefillFlopsTest, DenseQwen3) {
  const SynthPreset p = Preset("tiny");
  ASSERT_EQ(p.arch, "qwen3");
  const double H = double(p.hidden), q = double(p.heads * p.head_dim), kv = double(p.kv_heads * p.head_dim);
  const double per_layer = H * q + 2 * H * kv + q * H + 3 * H * double(p.ffn);  // q, k, v, o; gate, up, down
  const double attention = 2.0 * double(p.heads * p.head_dim) * 100.0;         // QK^T and PV at 100 keys
  EXPECT_DOUBLE_EQ(LoadedFlops(p, 100.0), 2.0 * double(p.layers) * (per_layer + attention));
}

TEST(PrefillFlopsTest, HybridQwen35CountsActiveExpertsAndAttentionLayersOnly) {
  const SynthPreset p = Preset("qwen3.5-tiny");
  ASSERT_EQ(p.arch, "qwen3_5_moe");
  ASSERT_GT(p.interval, 0);
  const double H = double(p.hidden), D = double(p.head_dim);
  const double kd = double(p.linear_key_heads * p.linear_key_dim), vd = double(p.linear_value_heads * p.linear_value_dim);
  // Gated DeltaNet: q, k, v and z in, b and a (one per value head), out.
  const double linear = H * (2 * kd + 2 * vd) + H * 2 * double(p.linear_value_heads) + vd * H;
  // Gated attention: q with its gate (2x), k, v, o.
  const double full = H * 2 * double(p.heads) * D + 2 * H * double(p.kv_heads) * D + double(p.heads) * D * H;
  const double moe = H * double(p.experts) + 3 * H * double(p.shared_ffn) + H +
                     double(p.experts_per_tok) * 3 * H * double(p.moe_ffn);  // router, shared expert, its gate, top-k
  const int64_t full_layers = p.layers / p.interval;
  const double attention = double(full_layers) * 2.0 * double(p.heads) * D * 64.0;
  const double want =
      2.0 * (double(p.layers - full_layers) * linear + double(full_layers) * full + double(p.layers) * moe + attention);
  EXPECT_NEAR(LoadedFlops(p, 64.0), want, 1e-9 * want);
}

}  // namespace
}  // namespace tern
