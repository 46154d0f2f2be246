// Quantization configs and the loader's checks of quantized Linear tensors.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "model/linear.h"
#include "model/quant_config.h"
#include "model/safetensors.h"

namespace tern {
namespace {

TEST(QuantConfigTest, ModelOptNvfp4WithExclusions) {
  const std::string hf = R"({"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "NVFP4",
      "group_size": 16, "kv_cache_quant_algo": "FP8", "exclude_modules": ["lm_head", "*.mlp.gate", "model.visual*"]}})";
  auto c = ParseQuantConfig("{}", hf, "/m");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->quant_algo, "NVFP4");
  EXPECT_EQ(c->kv_cache_quant_algo, "FP8");
  EXPECT_TRUE(c->ExcludedBy("lm_head"));
  EXPECT_TRUE(c->ExcludedBy("model.layers.3.mlp.gate"));
  EXPECT_FALSE(c->ExcludedBy("model.layers.3.mlp.gate_proj"));
  EXPECT_TRUE(c->ExcludedBy("model.visual.blocks.0.attn.qkv"));
  EXPECT_TRUE(c->CheckLinear("model.layers.0.self_attn.q_proj", QuantFormat::kNvfp4).ok());
  EXPECT_TRUE(c->CheckLinear("lm_head", QuantFormat::kNone).ok());
  Status s = c->CheckLinear("model.layers.0.mlp.gate", QuantFormat::kNvfp4);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("excludes it"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("*.mlp.gate"), std::string::npos) << s.message();
  EXPECT_FALSE(c->CheckLinear("model.layers.0.self_attn.q_proj", QuantFormat::kFp8).ok());
}

TEST(QuantConfigTest, ConfigJsonFormsAndMixedPrecision) {
  auto fp8 = ParseQuantConfig(
      R"({"quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128], "modules_to_not_convert": ["lm_head"]}})",
      "", "/m");
  ASSERT_TRUE(fp8.ok()) << fp8.status().message();
  EXPECT_EQ(fp8->quant_algo, "FP8");
  EXPECT_EQ(fp8->weight_block_size, (std::vector<int64_t>{128, 128}));
  EXPECT_TRUE(fp8->ExcludedBy("lm_head"));
  EXPECT_FALSE(
      ParseQuantConfig(R"({"quantization_config": {"quant_method": "fp8", "weight_block_size": [64, 64]}})", "", "/m")
          .ok());
  EXPECT_FALSE(ParseQuantConfig(R"({"quantization_config": {"quant_method": "gptq"}})", "", "/m").ok());

  const std::string mixed = R"({"quantization": {"quant_algo": "MIXED_PRECISION", "kv_cache_quant_algo": null,
      "exclude_modules": [], "quantized_layers": {"model.layers.0.mlp.experts.0.up_proj": {"quant_algo": "NVFP4"},
      "model.layers.0.self_attn.q_proj": {"quant_algo": "FP8"}}}})";
  auto m = ParseQuantConfig("{}", mixed, "/m");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_TRUE(m->CheckLinear("model.layers.0.mlp.experts.0.up_proj", QuantFormat::kNvfp4).ok());
  EXPECT_TRUE(m->CheckLinear("model.layers.0.self_attn.q_proj", QuantFormat::kFp8).ok());
  EXPECT_FALSE(m->CheckLinear("model.layers.0.self_attn.q_proj", QuantFormat::kNvfp4).ok());

  auto modelopt = ParseQuantConfig(
      R"({"quantization_config": {"quant_method": "modelopt", "quant_algo": "NVFP4", "ignore": ["lm_head"], "kv_cache_scheme": {"num_bits": 8}}})",
      "", "/m");
  ASSERT_TRUE(modelopt.ok()) << modelopt.status().message();
  EXPECT_EQ(modelopt->quant_algo, "NVFP4");
  EXPECT_EQ(modelopt->kv_cache_quant_algo, "FP8");
  EXPECT_TRUE(modelopt->ExcludedBy("lm_head"));
  EXPECT_FALSE(ParseQuantConfig("{}", R"({"quantization": {"quant_algo": "INT4_AWQ"}})", "/m").ok());
  EXPECT_FALSE(ParseQuantConfig("{}", "not json", "/m").ok());
}

// A directory with one safetensors file of the given tensors.
class LoaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (std::filesystem::temp_directory_path() /
            ("tern_quant_loader_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  Result<Linear> Load(const std::vector<TensorToWrite>& tensors, const QuantConfig& q, int64_t out, int64_t in,
                      ActivationNumerics numerics = ActivationNumerics::kFull) {
    Status s = WriteSafetensors(dir_ + "/model.safetensors", tensors);
    if (!s.ok()) return s;
    auto store = TensorStore::OpenDir(dir_);
    if (!store.ok()) return store.status();
    store_ = std::make_unique<TensorStore>(std::move(*store));
    WeightLoader w(*store_, q, numerics);
    return w.Load("layer", out, in);
  }
  static TensorToWrite T(std::string name, DType dt, std::vector<int64_t> shape, uint8_t fill = 0x22) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return {std::move(name), dt, shape, std::string(size_t(n) * DTypeSize(dt), char(fill))};
  }
  static TensorToWrite Scalar(std::string name, float v) {
    return {std::move(name), DType::kF32, {}, std::string(reinterpret_cast<const char*>(&v), 4)};
  }

  std::string dir_;
  std::unique_ptr<TensorStore> store_;
};

TEST_F(LoaderTest, Nvfp4LayerLoadsWithItsScales) {
  auto l = Load({T("layer.weight", DType::kU8, {4, 16}), T("layer.weight_scale", DType::kF8E4M3, {4, 2}, 0x38),
                 Scalar("layer.weight_scale_2", 0.5f), Scalar("layer.input_scale", 0.25f)},
                QuantConfig{}, 4, 32);
  ASSERT_TRUE(l.ok()) << l.status().message();
  EXPECT_EQ(l->format, QuantFormat::kNvfp4);
  EXPECT_EQ(l->w.format, kernels::WeightFormat::kNvfp4);
  EXPECT_EQ(l->w.scale_stride, 2);
  EXPECT_EQ(l->w.global_scale, 0.5f);
  EXPECT_EQ(l->input_scale, 0.25f);
  EXPECT_FALSE(l->quantize_input);
  EXPECT_EQ(l->bytes(), 4 * 16 + 4 * 2);
}

TEST_F(LoaderTest, Nvfp4ErrorsNameTheTensor) {
  // Block scales of the wrong shape.
  auto a = Load({T("layer.weight", DType::kU8, {4, 16}), T("layer.weight_scale", DType::kF8E4M3, {4, 3}),
                 Scalar("layer.weight_scale_2", 0.5f)},
                QuantConfig{}, 4, 32);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("layer.weight_scale"), std::string::npos) << a.status().message();
  // No global scale.
  auto b = Load({T("layer.weight", DType::kU8, {4, 16}), T("layer.weight_scale", DType::kF8E4M3, {4, 2})},
                QuantConfig{}, 4, 32);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("weight_scale_2"), std::string::npos) << b.status().message();
  // A negative global scale.
  auto c = Load({T("layer.weight", DType::kU8, {4, 16}), T("layer.weight_scale", DType::kF8E4M3, {4, 2}),
                 Scalar("layer.weight_scale_2", -1.0f)},
                QuantConfig{}, 4, 32);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("positive"), std::string::npos) << c.status().message();
  // W4A4 needs input_scale.
  auto d = Load({T("layer.weight", DType::kU8, {4, 16}), T("layer.weight_scale", DType::kF8E4M3, {4, 2}),
                 Scalar("layer.weight_scale_2", 0.5f)},
                QuantConfig{}, 4, 32, ActivationNumerics::kGpuQuantized);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("input_scale"), std::string::npos) << d.status().message();
  // An input_scale whose reciprocal is infinite (subnormal): W4A4 divides by it.
  auto f = Load({T("layer.weight", DType::kU8, {4, 16}), T("layer.weight_scale", DType::kF8E4M3, {4, 2}),
                 Scalar("layer.weight_scale_2", 0.5f), Scalar("layer.input_scale", 1e-40f)},
                QuantConfig{}, 4, 32);
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("layer.input_scale"), std::string::npos) << f.status().message();
  // Quantized but listed as excluded.
  QuantConfig q;
  q.quant_algo = "NVFP4";
  q.exclude = {"layer"};
  q.source = "hf_quant_config.json";
  auto e = Load({T("layer.weight", DType::kU8, {4, 16}), T("layer.weight_scale", DType::kF8E4M3, {4, 2}),
                 Scalar("layer.weight_scale_2", 0.5f)},
                q, 4, 32);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("excludes"), std::string::npos) << e.status().message();
}

TEST_F(LoaderTest, Fp8PerTensorAndBlockScales) {
  auto a = Load({T("layer.weight", DType::kF8E4M3, {130, 20}), Scalar("layer.weight_scale", 0.01f)}, QuantConfig{},
                130, 20);
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->w.format, kernels::WeightFormat::kFp8);
  EXPECT_EQ(a->w.scales, nullptr);
  EXPECT_EQ(a->w.global_scale, 0.01f);
  auto b = Load({T("layer.weight", DType::kF8E4M3, {130, 20}), T("layer.weight_scale_inv", DType::kF32, {2, 1})},
                QuantConfig{}, 130, 20);
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_NE(b->w.scales, nullptr);
  EXPECT_EQ(b->w.scale_stride, 1);
  auto c = Load({T("layer.weight", DType::kF8E4M3, {130, 20}), T("layer.weight_scale_inv", DType::kF32, {1, 1})},
                QuantConfig{}, 130, 20);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("weight_scale_inv"), std::string::npos) << c.status().message();
  auto d = Load({T("layer.weight", DType::kF8E4M3, {130, 20})}, QuantConfig{}, 130, 20);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("weight_scale"), std::string::npos) << d.status().message();
  // A scale next to an unquantized weight is a broken export.
  auto e = Load({T("layer.weight", DType::kBF16, {4, 16}), Scalar("layer.weight_scale", 1.0f)}, QuantConfig{}, 4, 16);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("not a quantized type"), std::string::npos) << e.status().message();
}

}  // namespace
}  // namespace tern
