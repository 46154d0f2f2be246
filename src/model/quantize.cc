#include "model/quantize.h"

#include <fnmatch.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/dtype.h"
#include "base/mapped_file.h"
#include "kernels/ops.h"
#include "model/quant_config.h"
#include "model/safetensors.h"

namespace tern {
namespace {

namespace fs = std::filesystem;
using ordered_json = nlohmann::ordered_json;

constexpr float kE2M1Max = 6.0f, kE4M3Max = 448.0f;

template <typename T>
std::string Bytes(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}
std::string ScalarBytes(float f) { return std::string(reinterpret_cast<const char*>(&f), 4); }


// A tensor as f32 (F32/BF16/F16).
std::vector<float> ToF32(const TensorView& t) {
  std::vector<float> out(size_t(t.numel()));
  kernels::ConvertToF32(t.dtype, t.data, t.numel(), out.data());
  return out;
}

bool IsFloat(DType d) { return d == DType::kF32 || d == DType::kBF16 || d == DType::kF16; }

class Writer {
 public:
  Writer(std::string dir, int64_t max_shard) : dir_(std::move(dir)), max_shard_(max_shard) {}

  Status Add(TensorToWrite t) {
    const int64_t n = int64_t(t.bytes.size());
    if (!shard_.empty() && shard_bytes_ + n > max_shard_) TERN_RETURN_IF_ERROR(Flush());
    shard_bytes_ += n;
    total_ += n;
    shard_.push_back(std::move(t));
    return Status::Ok();
  }

  // Writes the last shard and, when there are several, the index.
  Status Finish() {
    TERN_RETURN_IF_ERROR(Flush());
    if (files_.size() == 1) {
      std::error_code ec;
      fs::rename(fs::path(dir_) / files_[0].first, fs::path(dir_) / "model.safetensors", ec);
      if (ec) return Status::Errorf("{}: cannot rename shard: {}", dir_, ec.message());
      return Status::Ok();
    }
    ordered_json index = {{"metadata", {{"total_size", total_}}}, {"weight_map", ordered_json::object()}};
    for (size_t i = 0; i < files_.size(); ++i) {
      const std::string final_name = fmt::format("model-{:05d}-of-{:05d}.safetensors", i + 1, files_.size());
      std::error_code ec;
      fs::rename(fs::path(dir_) / files_[i].first, fs::path(dir_) / final_name, ec);
      if (ec) return Status::Errorf("{}: cannot rename shard: {}", dir_, ec.message());
      for (const auto& name : files_[i].second) index["weight_map"][name] = final_name;
    }
    std::ofstream f(fs::path(dir_) / "model.safetensors.index.json");
    f << index.dump(2) << "\n";
    if (!f) return Status::Errorf("{}: cannot write model.safetensors.index.json", dir_);
    return Status::Ok();
  }

  int64_t total() const { return total_; }

 private:
  Status Flush() {
    if (shard_.empty()) return Status::Ok();
    const std::string name = fmt::format("shard-{}.tmp", files_.size());
    std::vector<std::string> names;
    for (const auto& t : shard_) names.push_back(t.name);
    TERN_RETURN_IF_ERROR(WriteSafetensors((fs::path(dir_) / name).string(), shard_, {{"format", "pt"}}));
    files_.emplace_back(name, std::move(names));
    shard_.clear();
    shard_bytes_ = 0;
    return Status::Ok();
  }

  std::string dir_;
  int64_t max_shard_;
  std::vector<TensorToWrite> shard_;
  int64_t shard_bytes_ = 0, total_ = 0;
  std::vector<std::pair<std::string, std::vector<std::string>>> files_;
};

ordered_json ProducerJson() { return {{"name", "tern"}, {"version", "0.1"}}; }

}  // namespace

float AbsMax(const float* x, int64_t n) {
  float m = 0.0f;
  for (int64_t i = 0; i < n; ++i) m = std::max(m, std::fabs(x[i]));
  return m;
}

Nvfp4Weights QuantizeNvfp4(const float* w, int64_t N, int64_t K, float amax, ThreadPool* pool) {
  Nvfp4Weights q;
  q.weight_scale_2 = amax > 0.0f ? amax / (kE2M1Max * kE4M3Max) : 1.0f;
  const int64_t blocks = K / kernels::kNvfp4Block;
  q.codes.assign(size_t(N * K / 2), 0);
  q.scales.assign(size_t(N * blocks), 0);
  const auto rows = [&](size_t n0, size_t n1) {
  for (int64_t n = int64_t(n0); n < int64_t(n1); ++n)
    for (int64_t b = 0; b < blocks; ++b) {
      const float* x = w + n * K + b * kernels::kNvfp4Block;
      const float block_amax = AbsMax(x, kernels::kNvfp4Block);
      uint8_t sbyte = F32ToE4M3(1.0f);
      if (block_amax > 0.0f)
        sbyte = F32ToE4M3(std::clamp(block_amax / (kE2M1Max * q.weight_scale_2), 0x1p-9f, kE4M3Max));
      q.scales[size_t(n * blocks + b)] = sbyte;
      const float denom = E4M3ToF32(sbyte) * q.weight_scale_2;
      for (int64_t i = 0; i < kernels::kNvfp4Block; i += 2) {
        const uint8_t lo = F32ToE2M1(x[i] / denom), hi = F32ToE2M1(x[i + 1] / denom);
        q.codes[size_t((n * K + b * kernels::kNvfp4Block + i) / 2)] = uint8_t(lo | (hi << 4));
      }
    }
  };
  if (pool != nullptr) {
    pool->ParallelFor(size_t(N), 16, [&](size_t n0, size_t n1, size_t) { rows(n0, n1); });
  } else {
    rows(0, size_t(N));
  }
  return q;
}

Fp8Weights QuantizeFp8(const float* w, int64_t N, int64_t K, bool blocks, float amax) {
  Fp8Weights q;
  q.codes.assign(size_t(N * K), 0);
  if (!blocks) {
    if (amax < 0.0f) amax = AbsMax(w, N * K);
    const float scale = amax > 0.0f ? amax / kE4M3Max : 1.0f;
    q.scales = {scale};
    for (int64_t i = 0; i < N * K; ++i) q.codes[size_t(i)] = F32ToE4M3(w[i] / scale);
    return q;
  }
  const int64_t B = kernels::kFp8Block, br = (N + B - 1) / B, bc = (K + B - 1) / B;
  q.scales.assign(size_t(br * bc), 1.0f);
  for (int64_t r = 0; r < br; ++r)
    for (int64_t c = 0; c < bc; ++c) {
      float amax = 0.0f;
      for (int64_t n = r * B; n < std::min(N, (r + 1) * B); ++n)
        amax = std::max(amax, AbsMax(w + n * K + c * B, std::min(K, (c + 1) * B) - c * B));
      const float scale = amax > 0.0f ? amax / kE4M3Max : 1.0f;
      q.scales[size_t(r * bc + c)] = scale;
      for (int64_t n = r * B; n < std::min(N, (r + 1) * B); ++n)
        for (int64_t k = c * B; k < std::min(K, (c + 1) * B); ++k)
          q.codes[size_t(n * K + k)] = F32ToE4M3(w[n * K + k] / scale);
    }
  return q;
}

namespace {

// A Linear weight the checkpoint holds: a 2-D "<module>.weight", or one
// expert's slice of a fused 3-D tensor (part: 0 whole, 1 gate rows, 2 up rows, 3 down).
struct Candidate {
  std::string module;
  const TensorView* t = nullptr;
  int64_t expert = -1;
  int part = 0;
  int64_t N = 0, K = 0;
};

std::vector<float> CandidateWeights(const Candidate& c) {
  if (c.expert < 0) return ToF32(*c.t);
  const int64_t rows = c.t->shape[1], cols = c.t->shape[2];
  const int64_t row0 = c.part == 2 ? rows / 2 : 0;
  const size_t es = DTypeSize(c.t->dtype);
  std::vector<float> out(size_t(c.N * c.K));
  kernels::ConvertToF32(c.t->dtype, c.t->data + size_t((c.expert * rows + row0) * cols) * es, c.N * c.K, out.data());
  return out;
}

// ModelOpt's default-disabled quantizer patterns (spec §4.6), matched against
// "<module>.weight_quantizer" as ModelOpt matches its quantizer names.
const std::vector<std::string>& ModelOptDisabledPatterns() {
  static const std::vector<std::string> kPatterns = {
      "*block_sparse_moe.gate*", "*linear_attn.conv1d*", "*linear_attn.in_proj_a*", "*linear_attn.in_proj_b*",
      "*lm_head*",               "*mixer.conv1d*",       "*mlp.gate.*",             "*mlp.shared_expert_gate.*",
      "*output_layer*",          "*proj_out.*",          "*router*",                "mtp.*",
      "output.*",                "*embed_vision*",       "*vision_tower*",          "*visual*",
      "*vision_model*",          "*multi_modal_projector*"};
  return kPatterns;
}

bool FnMatchAny(const std::vector<std::string>& patterns, const std::string& s) {
  for (const auto& p : patterns)
    if (s == p || fnmatch(p.c_str(), s.c_str(), 0) == 0) return true;
  return false;
}

// The exclude_modules list ModelOpt writes: per unquantized module, the
// shortest dotted-prefix wildcard ("a.b*", or "a.b.*" standing for "a.b" and
// its children) that matches no quantized module, else the module itself.
std::vector<std::string> SummarizeExcludes(const std::vector<std::string>& unquantized,
                                           const std::vector<std::string>& quantized) {
  std::set<std::string> negatives;
  for (const auto& q : quantized) {
    negatives.insert(q);
    for (size_t i = 0; i <= q.size(); ++i) negatives.insert(q.substr(0, i) + "*");
  }
  std::set<std::string> result;
  for (const auto& name : unquantized) {
    std::vector<std::vector<std::string>> cands;
    for (size_t i = 0; i < name.size(); ++i)
      if (name[i] == '.') {
        cands.push_back({name.substr(0, i) + "*"});
        cands.push_back({name.substr(0, i), name.substr(0, i) + ".*"});
      }
    cands.push_back({name});
    std::vector<std::string> chosen;
    for (const auto& c : cands) {
      if (std::any_of(c.begin(), c.end(), [&](const std::string& p) { return negatives.count(p) > 0; })) continue;
      if (std::all_of(c.begin(), c.end(), [&](const std::string& p) { return result.count(p) > 0; })) {
        chosen.clear();
        break;
      }
      chosen = c;
      break;
    }
    if (chosen.size() == 2 && chosen[1] == chosen[0] + ".*") {
      result.insert(chosen[1]);
    } else {
      result.insert(chosen.begin(), chosen.end());
    }
  }
  return {result.begin(), result.end()};
}

// Modules whose scales ModelOpt's export merges because engines fuse them
// (quant_utils.preprocess_linear_fusion, layer_utils.sync_moe_gate_up_amax):
// NVFP4 shares weight_scale_2 and input_scale across q/k/v and across gate/up
// (dense and per expert); FP8 only shares each expert's gate/up weight_scale.
std::optional<std::string> FusionGroup(const std::string& module, bool nvfp4) {
  const size_t dot = module.rfind('.');
  if (dot == std::string::npos) return std::nullopt;
  const std::string parent = module.substr(0, dot), leaf = module.substr(dot + 1);
  static const std::regex kExpertParent(R"(.*\.experts\.\d+)");
  if (nvfp4 && (leaf == "q_proj" || leaf == "k_proj" || leaf == "v_proj")) return parent + "|qkv";
  if ((leaf == "gate_proj" || leaf == "up_proj") && (nvfp4 || std::regex_match(parent, kExpertParent)))
    return parent + "|gate_up";
  return std::nullopt;
}

}  // namespace

Result<std::string> QuantizeCheckpoint(const std::string& in_dir, const std::string& out_dir,
                                       const QuantizeOptions& opts) {
  std::error_code ec;
  if (fs::exists(out_dir, ec) && fs::equivalent(in_dir, out_dir, ec))
    return Status::Errorf("quantize: --out must differ from --model ({})", in_dir);
  fs::create_directories(out_dir, ec);
  if (ec) return Status::Errorf("quantize: cannot create {}: {}", out_dir, ec.message());
  TERN_ASSIGN_OR_RETURN(std::string config_text, ReadFileToString((fs::path(in_dir) / "config.json").string()));
  ordered_json config = ordered_json::parse(config_text, nullptr, false);
  if (!config.is_object()) return Status::Errorf("{}/config.json: not a JSON object", in_dir);
  if (config.contains("quantization_config"))
    return Status::Errorf("{}: the checkpoint is already quantized (config.json has quantization_config)", in_dir);
  TERN_ASSIGN_OR_RETURN(TensorStore store, TensorStore::OpenDir(in_dir));
  const bool nvfp4 = opts.format == CheckpointQuant::kNvfp4;
  const bool blocks = opts.format == CheckpointQuant::kFp8Block;

  // 1. The Linear weights, and which of them to quantize.
  static const std::regex kFused(R"((.*\.experts\.)(gate_up_proj|down_proj))");
  std::vector<Candidate> candidates;
  std::set<std::string> consumed;  // tensor names written as candidates
  for (const auto& [name, t] : store.all()) {
    if (!IsFloat(t.dtype)) continue;
    std::smatch m;
    if (t.shape.size() == 3 && std::regex_match(name, m, kFused)) {
      const int64_t E = t.shape[0], R = t.shape[1], C = t.shape[2];
      for (int64_t e = 0; e < E; ++e) {
        const std::string p = fmt::format("{}{}.", m[1].str(), e);
        if (m[2] == "gate_up_proj") {
          candidates.push_back({p + "gate_proj", &t, e, 1, R / 2, C});
          candidates.push_back({p + "up_proj", &t, e, 2, R / 2, C});
        } else {
          candidates.push_back({p + "down_proj", &t, e, 3, R, C});
        }
      }
      consumed.insert(name);
    } else if (t.shape.size() == 2 && name.size() > 7 && name.compare(name.size() - 7, 7, ".weight") == 0 &&
               !(name.size() >= 19 && name.compare(name.size() - 19, 19, "embed_tokens.weight") == 0)) {
      candidates.push_back({name.substr(0, name.size() - 7), &t, -1, 0, t.shape[0], t.shape[1]});
      consumed.insert(name);
    }
  }
  // A tied output layer (no lm_head.weight stored) is a module of its own all
  // the same, as in ModelOpt's export: listed among the excluded modules when
  // it stays unquantized; with quantize_lm_head it gets its own quantized
  // tensor, made from the embedding's rows.
  const std::string kHead = "lm_head";
  if (opts.quantize_lm_head && blocks)
    return Status::Error("quantize: --quantize-lm-head goes with the ModelOpt formats (nvfp4, fp8); Qwen's FP8 block "
                         "checkpoints keep the output layer unquantized");
  bool tied_head = false;
  if (store.Find(kHead + ".weight") == nullptr) {
    const TensorView* embed = nullptr;
    for (const char* name : {"model.embed_tokens.weight", "model.language_model.embed_tokens.weight"})
      if (embed == nullptr) embed = store.Find(name);
    if (embed != nullptr && embed->shape.size() == 2 && IsFloat(embed->dtype)) {
      candidates.push_back({kHead, embed, -1, 0, embed->shape[0], embed->shape[1]});
      tied_head = true;
    } else if (opts.quantize_lm_head) {
      return Status::Errorf("quantize: --quantize-lm-head: {} has no {}.weight and no 2-D float embedding it is "
                            "tied to (model.embed_tokens.weight)", in_dir, kHead);
    }
  }
  std::vector<std::string> quantized, unquantized;
  std::map<std::string, const Candidate*> by_module;
  for (const Candidate& c : candidates) {
    const bool head = opts.quantize_lm_head && c.module == kHead;
    const bool skip = (!head && FnMatchAny(ModelOptDisabledPatterns(), c.module + ".weight_quantizer")) ||
                      FnMatchAny(opts.exclude, c.module);
    (skip ? unquantized : quantized).push_back(c.module);
    by_module[c.module] = &c;
  }
  if (quantized.empty()) return Status::Errorf("quantize: no Linear layer of {} was left to quantize", in_dir);
  for (const auto& m : quantized) {
    const Candidate& c = *by_module[m];
    if (nvfp4 && c.K % kernels::kNvfp4Block != 0)
      return Status::Errorf("quantize: '{}' has input dimension {}, not a multiple of 16 (exclude it with --exclude)",
                            m, c.K);
  }

  // 2. Shared amaxes: weights per fusion group; inputs per expert projection
  // (max over the layer's experts), then per fusion group (NVFP4).
  std::map<std::string, float> w_amax, x_amax;
  for (const auto& m : quantized) {
    const std::vector<float> w = CandidateWeights(*by_module[m]);
    w_amax[m] = AbsMax(w.data(), int64_t(w.size()));
    auto it = opts.input_amax.find(m);
    if (it != opts.input_amax.end()) x_amax[m] = it->second;
  }
  static const std::regex kExpert(R"((.*\.experts)\.\d+\.(\w+))");
  std::map<std::string, float> expert_max;
  for (const auto& [m, a] : x_amax) {
    std::smatch hit;
    if (std::regex_match(m, hit, kExpert)) {
      float& g = expert_max[hit[1].str() + "|" + hit[2].str()];
      g = std::max(g, a);
    }
  }
  for (auto& [m, a] : x_amax) {
    std::smatch hit;
    if (std::regex_match(m, hit, kExpert)) a = expert_max[hit[1].str() + "|" + hit[2].str()];
  }
  std::map<std::string, float> group_w, group_x;
  for (const auto& m : quantized)
    if (auto g = FusionGroup(m, nvfp4)) {
      group_w[*g] = std::max(group_w[*g], w_amax[m]);
      if (x_amax.count(m)) group_x[*g] = std::max(group_x[*g], x_amax[m]);
    }
  for (const auto& m : quantized)
    if (auto g = FusionGroup(m, nvfp4)) {
      w_amax[m] = group_w[*g];
      if (nvfp4 && group_x.count(*g)) x_amax[m] = group_x[*g];
    }

  // 3. Write: quantized Linears, then every other tensor as stored.
  ThreadPool pool(0);
  Writer out(out_dir, opts.max_shard_bytes);
  for (const auto& m : quantized) {
    const Candidate& c = *by_module[m];
    const std::vector<float> w = CandidateWeights(c);
    std::optional<float> input_scale;
    if (!blocks) {
      auto it = x_amax.find(m);
      if (it == x_amax.end())
        return Status::Errorf("quantize: no calibration data reached '{}' (is it used by the model?)", m);
      input_scale = it->second / (nvfp4 ? kE2M1Max * kE4M3Max : kE4M3Max);
    }
    if (nvfp4) {
      Nvfp4Weights q = QuantizeNvfp4(w.data(), c.N, c.K, w_amax[m], &pool);
      TERN_RETURN_IF_ERROR(out.Add({m + ".weight", DType::kU8, {c.N, c.K / 2}, Bytes(q.codes)}));
      TERN_RETURN_IF_ERROR(
          out.Add({m + ".weight_scale", DType::kF8E4M3, {c.N, c.K / kernels::kNvfp4Block}, Bytes(q.scales)}));
      TERN_RETURN_IF_ERROR(out.Add({m + ".weight_scale_2", DType::kF32, {}, ScalarBytes(q.weight_scale_2)}));
    } else {
      Fp8Weights q = QuantizeFp8(w.data(), c.N, c.K, blocks, w_amax[m]);
      TERN_RETURN_IF_ERROR(out.Add({m + ".weight", DType::kF8E4M3, {c.N, c.K}, Bytes(q.codes)}));
      const int64_t B = kernels::kFp8Block;
      if (blocks) {
        TERN_RETURN_IF_ERROR(
            out.Add({m + ".weight_scale_inv", DType::kF32, {(c.N + B - 1) / B, (c.K + B - 1) / B}, Bytes(q.scales)}));
      } else {
        TERN_RETURN_IF_ERROR(out.Add({m + ".weight_scale", DType::kF32, {}, ScalarBytes(q.scales[0])}));
      }
    }
    if (input_scale) TERN_RETURN_IF_ERROR(out.Add({m + ".input_scale", DType::kF32, {}, ScalarBytes(*input_scale)}));
  }
  for (const auto& m : unquantized) {
    const Candidate& c = *by_module[m];
    // (A fused tensor left unquantized is written whole below; a tied head is not stored.)
    if (c.expert >= 0 || (tied_head && m == kHead)) continue;
    consumed.erase(m + ".weight");
  }
  for (const auto& [name, t] : store.all()) {
    if (consumed.count(name)) {
      // A fused expert tensor is written whole when none of its experts was quantized.
      std::smatch fm;
      if (!(t.shape.size() == 3 && std::regex_match(name, fm, kFused))) continue;
      const std::string first = fmt::format("{}0.{}", fm[1].str(), fm[2] == "down_proj" ? "down_proj" : "gate_proj");
      if (std::find(unquantized.begin(), unquantized.end(), first) == unquantized.end()) continue;
    }
    TERN_RETURN_IF_ERROR(
        out.Add({name, t.dtype, t.shape, std::string(reinterpret_cast<const char*>(t.data), t.nbytes)}));
  }
  if (opts.kv_cache_fp8) {
    if (blocks) return Status::Error("quantize: FP8 KV-cache scales go with the ModelOpt formats (nvfp4, fp8)");
    if (opts.kv_amax.empty()) return Status::Error("quantize: FP8 KV-cache scales need calibration data");
    for (const auto& [key, amax] : opts.kv_amax) {
      const size_t bar = key.find('|');
      const std::string attn = key.substr(0, bar), which = key.substr(bar + 1);
      const float s = (amax > 0.0f ? amax : 1.0f) / kE4M3Max;
      TERN_RETURN_IF_ERROR(out.Add({attn + (which == "k" ? ".k_proj.k_scale" : ".v_proj.v_scale"), DType::kF32, {},
                                    ScalarBytes(s)}));
    }
  }
  const int64_t num_quantized = int64_t(quantized.size());
  const std::vector<std::string> excluded = SummarizeExcludes(unquantized, quantized);
  TERN_RETURN_IF_ERROR(out.Finish());

  // Configs: ModelOpt's two forms (NVFP4, FP8) or Qwen's FP8 block form.
  ordered_json qc;
  if (blocks) {
    qc = {{"quant_method", "fp8"},
          {"fmt", "e4m3"},
          {"activation_scheme", "dynamic"},
          {"weight_block_size", {kernels::kFp8Block, kernels::kFp8Block}},
};
    // vLLM's Fp8Config key: exact names of the modules the user excluded.
    std::vector<std::string> user;
    for (const auto& m : unquantized)
      if (FnMatchAny(opts.exclude, m)) user.push_back(m);
    if (!user.empty()) qc["ignored_layers"] = user;
  } else {
    ordered_json weights = {{"num_bits", nvfp4 ? 4 : 8}, {"type", "float"}, {"dynamic", false}};
    if (nvfp4) weights["group_size"] = kernels::kNvfp4Block;
    qc = {{"quant_method", "modelopt"},
          {"quant_algo", nvfp4 ? "NVFP4" : "FP8"},
          {"config_groups", {{"group_0", {{"weights", weights}, {"input_activations", weights}, {"targets", {"Linear"}}}}}},
          {"ignore", excluded},
          {"producer", ProducerJson()}};
    if (opts.kv_cache_fp8) qc["kv_cache_scheme"] = {{"dynamic", false}, {"num_bits", 8}, {"type", "float"}};
    ordered_json hf = {{"producer", ProducerJson()},
                       {"quantization",
                        {{"quant_algo", nvfp4 ? "NVFP4" : "FP8"},
                         {"kv_cache_quant_algo", opts.kv_cache_fp8 ? ordered_json("FP8") : ordered_json(nullptr)},
                         {"exclude_modules", excluded}}}};
    if (nvfp4) hf["quantization"]["group_size"] = kernels::kNvfp4Block;
    std::ofstream f(fs::path(out_dir) / "hf_quant_config.json");
    f << hf.dump(2) << "\n";
    if (!f) return Status::Errorf("{}: cannot write hf_quant_config.json", out_dir);
  }
  config["quantization_config"] = qc;
  // A quantized head is never tied (engines that tie by the config would
  // read the embedding, or reject the codes), whether or not it was stored.
  if (std::find(quantized.begin(), quantized.end(), kHead) != quantized.end()) {
    config["tie_word_embeddings"] = false;
    if (config.contains("text_config") && config["text_config"].is_object())
      config["text_config"]["tie_word_embeddings"] = false;
  }
  {
    std::ofstream f(fs::path(out_dir) / "config.json");
    f << config.dump(2) << "\n";
    if (!f) return Status::Errorf("{}: cannot write config.json", out_dir);
  }
  // Everything else (tokenizer, templates, generation config) as it is.
  for (const auto& entry : fs::directory_iterator(in_dir, ec)) {
    const std::string fname = entry.path().filename().string();
    if (!entry.is_regular_file() || fname == "config.json" || fname == "hf_quant_config.json" ||
        fname == "model.safetensors.index.json" || entry.path().extension() == ".safetensors")
      continue;
    fs::copy_file(entry.path(), fs::path(out_dir) / fname, fs::copy_options::overwrite_existing, ec);
    if (ec) return Status::Errorf("quantize: cannot copy {}: {}", entry.path().string(), ec.message());
  }
  return fmt::format("{} Linear layers quantized to {}, {} kept unquantized; {:.1f} MB of weights",
                     num_quantized, blocks ? "FP8 (128x128 blocks)" : nvfp4 ? "NVFP4" : "FP8", unquantized.size(),
                     double(out.total()) / 1e6);
}

}  // namespace tern
