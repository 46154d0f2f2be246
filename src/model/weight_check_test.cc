// The load-time NaN guard finds every NaN and Inf by its bit pattern in each
// floating-point dtype, names the tensor, and leaves packed FP4 and integer
// bytes alone; LoadModel warns or, with WeightCheck::kError, refuses.
#include "model/weight_check.h"

#include <cmath>
#include <cstring>
#include <filesystem>

#include <gtest/gtest.h>

#include "model/model.h"
#include "model/synth_checkpoint.h"

namespace tern {
namespace {

template <typename T>
std::string Bytes(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

TEST(WeightCheck, FindsNonFiniteValuesInEveryFloatDtype) {
  const std::string dir = ::testing::TempDir() + "/weight_check";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::vector<float> f32(3000000, 1.5f);  // past one 1M-element piece: counts add across pieces
  f32[1500000] = INFINITY;
  f32[2999999] = -INFINITY;
  f32[2000000] = std::nanf("");
  const std::vector<uint16_t> bf16 = {0x3F80, 0x7F7F /* max finite */, 0xFF80 /* -inf */, 0x7FC1 /* nan */};
  const std::vector<uint16_t> f16 = {0x3C00, 0x7BFF /* max finite */, 0x7C00 /* inf */};
  const std::vector<uint8_t> e4m3 = {0x7E /* 448 */, 0xFE /* -448 */, 0xFF /* nan */, 0x78};
  const std::vector<uint8_t> fp4 = {0xFF, 0x77, 0xFF};  // packed E2M1: no NaN or Inf exists
  const std::vector<float> clean = {0.f, -0.f, 3.4e38f, -1e-45f};
  ASSERT_TRUE(WriteSafetensors(dir + "/model.safetensors",
                               {{"a.f32", DType::kF32, {3, 1000000}, Bytes(f32)},
                                {"b.bf16", DType::kBF16, {4}, Bytes(bf16)},
                                {"c.f16", DType::kF16, {3}, Bytes(f16)},
                                {"d.weight_scale", DType::kF8E4M3, {4}, Bytes(e4m3)},
                                {"e.weight", DType::kU8, {3}, Bytes(fp4)},
                                {"f.clean", DType::kF32, {4}, Bytes(clean)}})
                  .ok());
  auto store = TensorStore::OpenDir(dir);
  ASSERT_TRUE(store.ok()) << store.status().message();
  ThreadPool pool(2);
  const auto found = FindNonFiniteWeights(*store, pool);
  ASSERT_EQ(found.size(), 4u);
  EXPECT_EQ(found[0].name, "a.f32");
  EXPECT_EQ(found[0].count, 3);
  EXPECT_EQ(found[0].first, 1500000);
  EXPECT_EQ(found[1].name, "b.bf16");
  EXPECT_EQ(found[1].count, 2);
  EXPECT_EQ(found[1].first, 2);
  EXPECT_EQ(found[2].name, "c.f16");
  EXPECT_EQ(found[2].count, 1);
  EXPECT_EQ(found[2].first, 2);
  EXPECT_EQ(found[3].name, "d.weight_scale");
  EXPECT_EQ(found[3].count, 1);
  EXPECT_EQ(found[3].first, 2);
  EXPECT_EQ(DescribeNonFinite(found, 2),
            "'a.f32': 3 non-finite values (first at element 1500000); 'b.bf16': 2 non-finite values (first at "
            "element 2); and 2 more tensors");
}

// A checkpoint with one NaN in one expert's weight: served with a warning by
// default, refused with kError (tern serve --strict-weights), naming the tensor.
TEST(WeightCheck, LoadModelWarnsOrRefuses) {
  const std::string dir = ::testing::TempDir() + "/weight_check_model";
  std::filesystem::remove_all(dir);
  SynthPreset p{.name = "t", .arch = "qwen3_moe", .hidden = 32, .layers = 1, .heads = 4, .kv_heads = 2,
                .head_dim = 8, .ffn = 48, .vocab = 64, .tied = false, .experts = 2, .experts_per_tok = 1,
                .moe_ffn = 16, .max_positions = 64};
  ASSERT_TRUE(WriteSyntheticWeights(dir, {.preset = p, .vocab = 64, .dtype = DType::kBF16, .seed = 1,
                                          .bos_token_id = 1, .eos_token_id = 2}).ok());
  ASSERT_TRUE(LoadModel(dir, {.threads = 1, .weight_check = WeightCheck::kError}).ok());
  // Poison element 7 of one expert's down projection in place.
  const std::string name = "model.layers.0.mlp.experts.1.down_proj.weight";
  std::string file;
  {
    auto store = TensorStore::OpenDir(dir);
    ASSERT_TRUE(store.ok());
    const TensorView* t = store->Find(name);
    ASSERT_NE(t, nullptr);
    ASSERT_EQ(t->dtype, DType::kBF16);
    file = *t->file;
  }
  size_t offset = 0;
  auto text = ReadFileToString(file);
  ASSERT_TRUE(text.ok());
  {
    auto parsed = SafetensorsFile::ParseHeader(reinterpret_cast<const uint8_t*>(text->data()), text->size(), file);
    ASSERT_TRUE(parsed.ok());
    for (const auto& t : *parsed)
      if (t.name == name) offset = size_t(t.data - reinterpret_cast<const uint8_t*>(text->data()));
  }
  (*text)[offset + 14] = char(0xC0);  // element 7, little-endian BF16 0x7FC0: NaN
  (*text)[offset + 15] = char(0x7F);
  ASSERT_TRUE(WriteStringToFile(file, *text).ok());
  auto refused = LoadModel(dir, {.threads = 1, .weight_check = WeightCheck::kError});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("weights hold NaN or Inf: '" + name +
                                            "': 1 non-finite value (first at element 7)"),
            std::string::npos)
      << refused.status().message();
  EXPECT_TRUE(LoadModel(dir, {.threads = 1}).ok());  // kWarn: served, with a warning on stderr
  EXPECT_TRUE(LoadModel(dir, {.threads = 1, .weight_check = WeightCheck::kSkip}).ok());
}

}  // namespace
}  // namespace tern
