// The MTP head through the Model interface, on tern's synthetic qwen3.5-tiny:
// its KV-cache slot, the hidden states it reads, and that its own KV cache makes
// row-by-row and chunked runs agree. (Its numerics against the float64 reference
// are tests/integration: compare.py --mtp.)
#include "model/mtp.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "base/mapped_file.h"
#include "kernels/cpu_features.h"
#include "model/model.h"
#include "model/safetensors.h"
#include "model/synth_checkpoint.h"

namespace tern {
namespace {

namespace fs = std::filesystem;

std::string SynthDir(const std::string& preset_name) {
  const fs::path dir = fs::temp_directory_path() / ("tern_mtp_test_" + preset_name + "_" + std::to_string(::getpid()));
  for (const SynthPreset& p : SynthPresets())
    if (p.name == preset_name) {
      Status s = WriteSyntheticWeights(dir.string(), {.preset = p, .vocab = 512, .seed = 5});
      EXPECT_TRUE(s.ok()) << s.message();
    }
  return dir.string();
}

double Nrms(const float* a, const float* b, int64_t n) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < n; ++i) {
    num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    den += double(b[i]) * b[i];
  }
  return std::sqrt(num / den);
}

class MtpTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(SynthDir("qwen3.5-tiny"));
    Result<std::unique_ptr<Model>> m = LoadModel(*dir_, {.threads = 2});
    ASSERT_TRUE(m.ok()) << m.status().message();
    model_ = m->release();
  }
  static void TearDownTestSuite() {
    delete model_;
    fs::remove_all(*dir_);
    delete dir_;
  }
  static std::unique_ptr<KvCache> Cache() {
    auto c = KvCache::Create(model_->cache_spec_with_mtp(), {.block_size = 16, .num_blocks = 2, .dtype = DType::kF32,
                                                    .num_state_slots = 1});
    EXPECT_TRUE(c.ok()) << c.status().message();
    return std::move(*c);
  }
  static std::string* dir_;
  static Model* model_;
};
std::string* MtpTest::dir_ = nullptr;
Model* MtpTest::model_ = nullptr;

TEST_F(MtpTest, HeadHasItsOwnKvSlot) {
  EXPECT_EQ(model_->mtp_num_layers(), 1);
  // qwen3.5-tiny: 4 layers, one of them full attention; the MTP layer's slot
  // follows, reserved only by caches that ask for it (serving does not).
  EXPECT_EQ(model_->cache_spec().attention_layers, 1);
  EXPECT_EQ(model_->cache_spec_with_mtp().attention_layers, 2);
}

TEST_F(MtpTest, CacheWithoutTheHeadsSlotIsRefused) {
  auto cache = KvCache::Create(model_->cache_spec(), {.block_size = 16, .num_blocks = 2, .dtype = DType::kF32,
                                                      .num_state_slots = 1});
  ASSERT_TRUE(cache.ok());
  const std::vector<int32_t> toks = {5}, table = {0};
  std::vector<float> hidden(size_t(model_->config().hidden_size), 0.5f), logits;
  SequenceChunk c{.tokens = toks, .start_pos = 0, .block_table = table, .state_slot = 0};
  Status s = model_->MtpForward({&c, 1}, hidden, **cache, logits);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("cache_spec_with_mtp"), std::string::npos) << s.message();
}

TEST_F(MtpTest, ForwardWithHiddenKeepsTheLogits) {
  const std::vector<int32_t> prompt = {3, 17, 99, 250, 5, 42, 7};
  const std::vector<int32_t> table = {0, 1};
  std::vector<float> plain, with, hidden;
  for (bool want_hidden : {false, true}) {
    auto cache = Cache();
    SequenceChunk c{.tokens = prompt, .start_pos = 0, .block_table = table, .state_slot = 0, .all_logits = true};
    Status s = want_hidden ? model_->ForwardWithHidden({&c, 1}, *cache, with, hidden)
                           : model_->Forward({&c, 1}, *cache, plain);
    ASSERT_TRUE(s.ok()) << s.message();
  }
  EXPECT_EQ(plain, with);
  ASSERT_EQ(int64_t(hidden.size()), int64_t(prompt.size()) * model_->config().hidden_size);
}

// The head over 12 positions at once, and in chunks of 1, 5 and 6 rows through
// its KV cache, gives the same logits; so does a second sequence's worth of
// rows after a first one that only fills the cache (skip_logits).
TEST_F(MtpTest, ChunkedRowsMatchOneCall) {
  // f32 activations: on the amx path 12 rows round GEMM inputs to BF16 and 1-6 rows may not
  // (kernels/cpu_features.h); this test is about the chunking, to f32 agreement.
  ASSERT_TRUE(kernels::SetActivations("f32").ok());
  struct Restore {
    ~Restore() { (void)kernels::SetActivations("bf16"); }
  } restore;
  const std::vector<int32_t> ids = {3, 17, 99, 250, 5, 42, 7, 300, 12, 64, 128, 200, 31};
  const std::vector<int32_t> table = {0, 1};
  const int64_t n = 12, H = model_->config().hidden_size, V = model_->config().vocab_size;
  std::vector<float> logits, hidden;
  {
    auto cache = Cache();
    SequenceChunk c{.tokens = std::span(ids).first(n), .start_pos = 0, .block_table = table, .state_slot = 0};
    ASSERT_TRUE(model_->ForwardWithHidden({&c, 1}, *cache, logits, hidden).ok());
  }
  const std::span<const int32_t> next = std::span(ids).subspan(1, n);  // the token after each position
  std::vector<float> whole;
  {
    auto cache = Cache();
    SequenceChunk m{.tokens = next, .start_pos = 0, .block_table = table, .all_logits = true};
    Status s = model_->MtpForward({&m, 1}, hidden, *cache, whole);
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_EQ(int64_t(whole.size()), n * V);
  }
  auto cache = Cache();
  int64_t pos = 0;
  for (int64_t k : {1, 5, 6}) {
    SequenceChunk m{.tokens = next.subspan(size_t(pos), size_t(k)), .start_pos = pos, .block_table = table,
                    .all_logits = true};
    std::vector<float> part;
    Status s = model_->MtpForward({&m, 1}, std::span<const float>(hidden).subspan(size_t(pos * H), size_t(k * H)),
                                  *cache, part);
    ASSERT_TRUE(s.ok()) << s.message();
    for (int64_t r = 0; r < k; ++r)
      EXPECT_LT(Nrms(part.data() + r * V, whole.data() + (pos + r) * V, V), 1e-5) << "row " << pos + r;
    pos += k;
  }
}

TEST_F(MtpTest, BadInputsAreErrors) {
  auto cache = Cache();
  const std::vector<int32_t> toks = {1, 2}, table = {0, 1};
  std::vector<float> hidden(size_t(model_->config().hidden_size)), logits;  // one row for two tokens
  SequenceChunk m{.tokens = toks, .start_pos = 0, .block_table = table};
  Status s = model_->MtpForward({&m, 1}, hidden, *cache, logits);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("hidden"), std::string::npos) << s.message();
  hidden.resize(hidden.size() * 2);
  EXPECT_FALSE(model_->MtpForward({&m, 1}, hidden, *cache, logits, /*step=*/-1).ok());
  EXPECT_TRUE(model_->MtpForward({&m, 1}, hidden, *cache, logits, /*step=*/3).ok());  // step % 1 layer
}

// A hybrid checkpoint's linear-attention layers are checked however the
// config names them: without layer_types and full_attention_interval (HF's
// default interval of 4 applies) a linear_conv_kernel_dim of 128 once passed
// unchecked, and the causal convolution wrote past its stack buffer; a
// conv1d.weight of an integer dtype was read as zeros.
TEST(HybridLoadTest, LinearAttentionFieldsAndTensorsAreChecked) {
  const std::string dir = ::testing::TempDir() + "/tern_hybrid_load_" + std::to_string(::getpid());
  for (const SynthPreset& p : SynthPresets()) {
    if (p.name == "qwen3.5-tiny") {
      ASSERT_TRUE(WriteSyntheticWeights(dir, {.preset = p, .vocab = 512, .dtype = DType::kF32, .seed = 5}).ok());
    }
  }
  const std::string config_path = dir + "/config.json";
  auto text = ReadFileToString(config_path);
  ASSERT_TRUE(text.ok());
  const nlohmann::json original = nlohmann::json::parse(*text);
  {
    nlohmann::json c = original;
    nlohmann::json& t = c.contains("text_config") ? c["text_config"] : c;
    t.erase("layer_types");
    t.erase("full_attention_interval");
    t["linear_conv_kernel_dim"] = 128;
    ASSERT_TRUE(WriteStringToFile(config_path, c.dump()).ok());
    auto m = LoadModel(dir, {.threads = 1});
    ASSERT_FALSE(m.ok());
    EXPECT_NE(m.status().message().find("\"linear_conv_kernel_dim\" is 128"), std::string::npos)
        << m.status().message();
    ASSERT_TRUE(WriteStringToFile(config_path, original.dump()).ok());
  }
  // conv1d.weight as I32, the width of the F32 it is: only the header's dtype changes.
  std::string file;
  const std::string name = "model.language_model.layers.0.linear_attn.conv1d.weight";
  {
    auto store = TensorStore::OpenDir(dir);
    ASSERT_TRUE(store.ok());
    const TensorView* t = store->Find(name);
    ASSERT_NE(t, nullptr) << name;
    ASSERT_EQ(t->dtype, DType::kF32);
    file = *t->file;
  }
  auto bytes = ReadFileToString(file, size_t(1) << 30);
  ASSERT_TRUE(bytes.ok());
  const std::string entry = "\"" + name + "\":{\"dtype\"";
  const size_t at = bytes->find(entry);
  ASSERT_NE(at, std::string::npos);
  ASSERT_EQ(bytes->substr(at + entry.size(), 6), ":\"F32\"");
  bytes->replace(at + entry.size(), 6, ":\"I32\"");
  ASSERT_TRUE(WriteStringToFile(file, *bytes).ok());
  auto m = LoadModel(dir, {.threads = 1});
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("'" + name + "' has dtype I32; expected F32, BF16 or F16"), std::string::npos)
      << m.status().message();
  fs::remove_all(dir);
}

TEST(MtpNoHeadTest, Qwen3HasNone) {
  const std::string dir = SynthDir("tiny-tied");
  Result<std::unique_ptr<Model>> m = LoadModel(dir, {.threads = 1});
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ((*m)->mtp_num_layers(), 0);
  auto cache = KvCache::Create((*m)->cache_spec(), {.block_size = 16, .num_blocks = 1, .dtype = DType::kF32});
  ASSERT_TRUE(cache.ok());
  const std::vector<int32_t> toks = {1}, table = {0};
  std::vector<float> hidden(size_t((*m)->config().hidden_size)), logits;
  SequenceChunk c{.tokens = toks, .start_pos = 0, .block_table = table};
  Status s = (*m)->MtpForward({&c, 1}, hidden, **cache, logits);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("MTP"), std::string::npos) << s.message();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tern
