#include "model/synth_checkpoint.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/mapped_file.h"
#include "model/safetensors.h"

namespace tern {
namespace fs = std::filesystem;

std::vector<SynthPreset> SynthPresets() {
  return {
      // name, arch, hidden, layers, heads, kv, head_dim, ffn, vocab(0: tokenizer's), tied, experts, k, moe_ffn
      {"tiny", "qwen3", 64, 2, 4, 2, 16, 128, 0, false, 0, 0, 0},
      {"tiny-tied", "qwen3", 64, 2, 4, 2, 16, 128, 0, true, 0, 0, 0},
      {"tiny", "qwen3_moe", 64, 2, 4, 2, 16, 96, 0, false, 8, 2, 32},
      {"qwen3-0.6b", "qwen3", 1024, 28, 16, 8, 128, 3072, 151936, true, 0, 0, 0},
      {"moe-small", "qwen3_moe", 2048, 8, 32, 4, 128, 6144, 151936, false, 128, 8, 768},
      // Qwen3.5: 3 linear-attention layers, then one full (interval 4). A shared
      // expert of 64 (not 48): NVFP4 halves of it still fall on 16-element blocks (--tp 2).
      {"qwen3.5-tiny", "qwen3_5_moe", 64, 4, 4, 2, 32, 0, 0, false, 8, 2, 32, 4096, 2, 4, 16, 16, 4, 64, 4, 0.25, 1},
      // The same with lm_head tied to the embedding (no lm_head.weight; tie_word_embeddings at both levels).
      {"qwen3.5-tiny-tied", "qwen3_5_moe", 64, 4, 4, 2, 32, 0, 0, true, 8, 2, 32, 4096, 2, 4, 16, 16, 4, 64, 4, 0.25,
       1},
      // Qwen3-Next: the same dimensions, fused in_proj_qkvz / in_proj_ba, flat model.layers.* names.
      {"qwen3-next-tiny", "qwen3_next", 64, 4, 4, 2, 32, 96, 0, false, 8, 2, 32, 4096, 2, 4, 16, 16, 4, 64, 4, 0.25,
       1},
      // The real 397B per-layer dimensions (hidden 4096, GDN 16/64 heads of 128,
      // attention 32/2 heads of 256, experts of 1024, top-10, vocab 248320) with
      // 4 layers and 16 experts instead of 60 and 512, and no MTP head: for benchmarks.
      {"qwen3.5-layer", "qwen3_5_moe", 4096, 4, 32, 2, 256, 0, 248320, false, 16, 10, 1024, 262144, 16, 64, 128, 128,
       4, 1024, 4, 0.25},
  };
}

namespace {

// splitmix64 -> uniform -> Box-Muller: fast, seeded, portable.
class Normal {
 public:
  explicit Normal(uint64_t seed) : s_(seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull) {}
  double Next() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    const double u1 = (double(NextU64() >> 11) + 0.5) * 0x1p-53, u2 = double(NextU64() >> 11) * 0x1p-53;
    const double r = std::sqrt(-2.0 * std::log(u1)), a = 2.0 * M_PI * u2;
    spare_ = r * std::sin(a);
    has_spare_ = true;
    return r * std::cos(a);
  }

 private:
  uint64_t NextU64() {
    uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint64_t s_;
  double spare_ = 0;
  bool has_spare_ = false;
};

std::string RandomBytes(Normal& rng, int64_t count, double mean, double std, DType dtype) {
  std::string out(size_t(count) * DTypeSize(dtype), '\0');
  for (int64_t i = 0; i < count; ++i) {
    const float v = float(mean + std * rng.Next());
    switch (dtype) {
      case DType::kF32: std::memcpy(&out[size_t(i) * 4], &v, 4); break;
      case DType::kBF16: { const uint16_t b = F32ToBf16(v); std::memcpy(&out[size_t(i) * 2], &b, 2); break; }
      case DType::kF16: { const uint16_t h = F32ToF16(v); std::memcpy(&out[size_t(i) * 2], &h, 2); break; }
      default: break;
    }
  }
  return out;
}

std::string TorchDtypeName(DType t) {
  return t == DType::kF32 ? "float32" : t == DType::kF16 ? "float16" : "bfloat16";
}

bool IsNext(const SynthPreset& p) { return p.arch == "qwen3_next"; }
bool IsHybrid(const SynthPreset& p) { return p.arch == "qwen3_5_moe" || IsNext(p); }
bool IsLinearLayer(const SynthPreset& p, int64_t l) { return IsHybrid(p) && (l + 1) % p.interval != 0; }

// Qwen3.5's VLM-wrapper config.json, the text model under text_config.
nlohmann::ordered_json HybridConfigJson(const SynthPreset& p, DType dtype, int64_t vocab, int32_t eos, int32_t bos) {
  nlohmann::ordered_json t;
  t["model_type"] = "qwen3_5_moe_text";
  t["hidden_size"] = p.hidden;
  t["num_hidden_layers"] = p.layers;
  t["num_attention_heads"] = p.heads;
  t["num_key_value_heads"] = p.kv_heads;
  t["head_dim"] = p.head_dim;
  t["hidden_act"] = "silu";
  t["attn_output_gate"] = true;
  t["attention_bias"] = false;
  t["max_position_embeddings"] = p.max_positions;
  t["rms_norm_eps"] = 1e-6;
  t["rope_parameters"] = {{"rope_type", "default"},
                          {"rope_theta", 10000000},
                          {"partial_rotary_factor", p.partial_rotary},
                          {"mrope_interleaved", true},
                          {"mrope_section", {11, 11, 10}}};
  t["full_attention_interval"] = p.interval;
  nlohmann::ordered_json types = nlohmann::ordered_json::array();
  for (int64_t l = 0; l < p.layers; ++l) types.push_back(IsLinearLayer(p, l) ? "linear_attention" : "full_attention");
  t["layer_types"] = types;
  t["linear_num_key_heads"] = p.linear_key_heads;
  t["linear_num_value_heads"] = p.linear_value_heads;
  t["linear_key_head_dim"] = p.linear_key_dim;
  t["linear_value_head_dim"] = p.linear_value_dim;
  t["linear_conv_kernel_dim"] = p.conv_kernel;
  t["num_experts"] = p.experts;
  t["num_experts_per_tok"] = p.experts_per_tok;
  t["moe_intermediate_size"] = p.moe_ffn;
  t["shared_expert_intermediate_size"] = p.shared_ffn;
  t["mamba_ssm_dtype"] = "float32";
  t["mtp_num_hidden_layers"] = p.mtp_layers;
  t["mtp_use_dedicated_embeddings"] = false;
  t["vocab_size"] = vocab;
  t["bos_token_id"] = bos;
  t["eos_token_id"] = eos;
  t["dtype"] = TorchDtypeName(dtype);
  nlohmann::ordered_json c;
  c["architectures"] = {"Qwen3_5MoeForConditionalGeneration"};
  c["model_type"] = "qwen3_5_moe";
  t["tie_word_embeddings"] = p.tied;
  c["text_config"] = t;
  c["tie_word_embeddings"] = p.tied;
  c["torch_dtype"] = TorchDtypeName(dtype);
  return c;
}

// Qwen3-Next's flat config.json (Qwen3-Next-80B-A3B style: rope_theta and
// partial_rotary_factor at the top, layer kinds from full_attention_interval).
nlohmann::ordered_json NextConfigJson(const SynthPreset& p, DType dtype, int64_t vocab, int32_t eos, int32_t bos) {
  nlohmann::ordered_json c;
  c["architectures"] = {"Qwen3NextForCausalLM"};
  c["model_type"] = "qwen3_next";
  c["hidden_size"] = p.hidden;
  c["intermediate_size"] = p.ffn;
  c["num_hidden_layers"] = p.layers;
  c["num_attention_heads"] = p.heads;
  c["num_key_value_heads"] = p.kv_heads;
  c["head_dim"] = p.head_dim;
  c["hidden_act"] = "silu";
  c["attention_bias"] = false;
  c["max_position_embeddings"] = p.max_positions;
  c["rms_norm_eps"] = 1e-6;
  c["rope_theta"] = 10000000;
  c["partial_rotary_factor"] = p.partial_rotary;
  c["rope_scaling"] = nullptr;
  c["full_attention_interval"] = p.interval;
  c["linear_num_key_heads"] = p.linear_key_heads;
  c["linear_num_value_heads"] = p.linear_value_heads;
  c["linear_key_head_dim"] = p.linear_key_dim;
  c["linear_value_head_dim"] = p.linear_value_dim;
  c["linear_conv_kernel_dim"] = p.conv_kernel;
  c["num_experts"] = p.experts;
  c["num_experts_per_tok"] = p.experts_per_tok;
  c["moe_intermediate_size"] = p.moe_ffn;
  c["shared_expert_intermediate_size"] = p.shared_ffn;
  c["norm_topk_prob"] = true;
  c["decoder_sparse_step"] = 1;
  c["mlp_only_layers"] = nlohmann::ordered_json::array();
  c["mtp_num_hidden_layers"] = p.mtp_layers;
  c["tie_word_embeddings"] = false;
  c["vocab_size"] = vocab;
  c["bos_token_id"] = bos;
  c["eos_token_id"] = eos;
  c["torch_dtype"] = TorchDtypeName(dtype);
  return c;
}

nlohmann::ordered_json ConfigJson(const SynthPreset& p, DType dtype, int64_t vocab, int32_t eos, int32_t bos) {
  if (IsNext(p)) return NextConfigJson(p, dtype, vocab, eos, bos);
  if (IsHybrid(p)) return HybridConfigJson(p, dtype, vocab, eos, bos);
  nlohmann::ordered_json c;
  c["architectures"] = {p.arch == "qwen3" ? "Qwen3ForCausalLM" : "Qwen3MoeForCausalLM"};
  c["model_type"] = p.arch;
  c["hidden_size"] = p.hidden;
  c["intermediate_size"] = p.ffn;
  c["num_hidden_layers"] = p.layers;
  c["num_attention_heads"] = p.heads;
  c["num_key_value_heads"] = p.kv_heads;
  c["head_dim"] = p.head_dim;
  c["hidden_act"] = "silu";
  c["max_position_embeddings"] = p.max_positions;
  c["rms_norm_eps"] = 1e-6;
  c["rope_theta"] = 1000000.0;
  c["attention_bias"] = false;
  c["tie_word_embeddings"] = p.tied;
  c["vocab_size"] = vocab;
  c["bos_token_id"] = bos;
  c["eos_token_id"] = eos;
  c["torch_dtype"] = TorchDtypeName(dtype);
  if (p.arch == "qwen3_moe") {
    c["num_experts"] = p.experts;
    c["num_experts_per_tok"] = p.experts_per_tok;
    c["moe_intermediate_size"] = p.moe_ffn;
    c["norm_topk_prob"] = true;
    c["decoder_sparse_step"] = 1;
    c["mlp_only_layers"] = nlohmann::ordered_json::array();
  }
  return c;
}

// A gated full-attention layer's self_attn.* (zero-centred q/k norms near 0).
template <typename Add>
void WriteGatedAttention(const SynthPreset& p, const std::string& a, Add& add) {
  const double kStd = 0.02;
  const int64_t H = p.hidden, D = p.head_dim;
  add(a + "q_proj.weight", {2 * p.heads * D, H}, 0, kStd);
  add(a + "k_proj.weight", {p.kv_heads * D, H}, 0, kStd);
  add(a + "v_proj.weight", {p.kv_heads * D, H}, 0, kStd);
  add(a + "o_proj.weight", {H, p.heads * D}, 0, kStd);
  add(a + "q_norm.weight", {D}, 0, 0.1);
  add(a + "k_norm.weight", {D}, 0, 0.1);
}

// A sparse MoE with a shared expert (mlp.*), per-expert tensors.
template <typename Add>
void WriteSharedExpertMoe(const SynthPreset& p, const std::string& pre, Add& add) {
  const double kStd = 0.02;
  const int64_t H = p.hidden;
  add(pre + "mlp.gate.weight", {p.experts, H}, 0, kStd);
  for (int64_t e = 0; e < p.experts; ++e) {
    const std::string ep = fmt::format("{}mlp.experts.{}.", pre, e);
    add(ep + "gate_proj.weight", {p.moe_ffn, H}, 0, kStd);
    add(ep + "up_proj.weight", {p.moe_ffn, H}, 0, kStd);
    add(ep + "down_proj.weight", {H, p.moe_ffn}, 0, kStd);
  }
  add(pre + "mlp.shared_expert.gate_proj.weight", {p.shared_ffn, H}, 0, kStd);
  add(pre + "mlp.shared_expert.up_proj.weight", {p.shared_ffn, H}, 0, kStd);
  add(pre + "mlp.shared_expert.down_proj.weight", {H, p.shared_ffn}, 0, kStd);
  add(pre + "mlp.shared_expert_gate.weight", {1, H}, 0, kStd);
}

// Qwen3.5's tensors under model.language_model.* (Qwen3-Next: model.*, fused
// linear-attention input projections), spec §2, random: zero-centred norms near
// 0 (they compute 1 + w), the gated norm near 1, A_log and dt_bias giving decays
// in (0, 1); then the MTP head (mtp.*, spec §2.7; a MoE layer, as Qwen3-Next's
// rule gives for index 0 of these presets).
template <typename Add>
void WriteHybridLayers(const SynthPreset& p, int64_t vocab, Add& add) {
  const double kStd = 0.02;
  const std::string m = IsNext(p) ? "model." : "model.language_model.";
  const int64_t H = p.hidden;
  const int64_t key = p.linear_key_heads * p.linear_key_dim, value = p.linear_value_heads * p.linear_value_dim;
  const int64_t conv = 2 * key + value;
  add(m + "embed_tokens.weight", {vocab, H}, 0, kStd);
  for (int64_t l = 0; l < p.layers; ++l) {
    const std::string pre = fmt::format("{}layers.{}.", m, l);
    add(pre + "input_layernorm.weight", {H}, 0, 0.1);
    if (IsLinearLayer(p, l)) {
      const std::string a = pre + "linear_attn.";
      if (IsNext(p)) {
        add(a + "in_proj_qkvz.weight", {conv + value, H}, 0, kStd);
        add(a + "in_proj_ba.weight", {2 * p.linear_value_heads, H}, 0, kStd);
      } else {
        add(a + "in_proj_qkv.weight", {conv, H}, 0, kStd);
        add(a + "in_proj_z.weight", {value, H}, 0, kStd);
        add(a + "in_proj_b.weight", {p.linear_value_heads, H}, 0, kStd);
        add(a + "in_proj_a.weight", {p.linear_value_heads, H}, 0, kStd);
      }
      add(a + "conv1d.weight", {conv, 1, p.conv_kernel}, 0, 0.3);
      add(a + "dt_bias", {p.linear_value_heads}, 0, 0.5);
      add(a + "A_log", {p.linear_value_heads}, 0, 0.5);
      add(a + "norm.weight", {p.linear_value_dim}, 1, 0.1);
      add(a + "out_proj.weight", {H, value}, 0, kStd);
    } else {
      WriteGatedAttention(p, pre + "self_attn.", add);
    }
    add(pre + "post_attention_layernorm.weight", {H}, 0, 0.1);
    WriteSharedExpertMoe(p, pre, add);
  }
  add(m + "norm.weight", {H}, 0, 0.1);
  if (!p.tied) add("lm_head.weight", {vocab, H}, 0, kStd);
  if (p.mtp_layers > 0) {
    add("mtp.fc.weight", {H, 2 * H}, 0, kStd);
    add("mtp.pre_fc_norm_embedding.weight", {H}, 0, 0.1);
    add("mtp.pre_fc_norm_hidden.weight", {H}, 0, 0.1);
    for (int64_t l = 0; l < p.mtp_layers; ++l) {
      const std::string pre = fmt::format("mtp.layers.{}.", l);
      add(pre + "input_layernorm.weight", {H}, 0, 0.1);
      WriteGatedAttention(p, pre + "self_attn.", add);
      add(pre + "post_attention_layernorm.weight", {H}, 0, 0.1);
      WriteSharedExpertMoe(p, pre, add);
    }
    add("mtp.norm.weight", {H}, 0, 0.1);
  }
}

}  // namespace

Status WriteSyntheticWeights(const std::string& out_dir, const SynthWeightsOptions& so) {
  const SynthPreset& p = so.preset;
  const DType dtype = so.dtype;
  const int64_t vocab = so.vocab;
  if (dtype != DType::kF32 && dtype != DType::kBF16 && dtype != DType::kF16)
    return Status::Error("synth: the weight dtype must be F32, BF16 or F16");
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) return Status::Errorf("synth: cannot create {}: {}", out_dir, ec.message());
  const fs::path out(out_dir);
  TERN_RETURN_IF_ERROR(WriteStringToFile((out / "config.json").string(),
                                         ConfigJson(p, dtype, vocab, so.eos_token_id, so.bos_token_id).dump(2) + "\n"));
  // Full shards are written at once (under temporary names, renamed at the end
  // when their count is known) so memory holds one shard at a time.
  const std::map<std::string, std::string> meta = {{"format", "pt"}};
  Normal rng(so.seed);
  std::vector<TensorToWrite> shard;
  std::vector<std::vector<std::string>> shard_names;
  int64_t shard_bytes = 0, total_bytes = 0;
  Status write_status;
  auto flush = [&]() {
    if (shard.empty() || !write_status.ok()) return;
    shard_names.emplace_back();
    for (const auto& t : shard) shard_names.back().push_back(t.name);
    write_status = WriteSafetensors((out / fmt::format("shard-{}.tmp", shard_names.size())).string(), shard, meta);
    shard.clear();
    shard_bytes = 0;
  };
  auto add = [&](std::string name, std::vector<int64_t> shape, double mean, double std) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    const int64_t bytes = n * int64_t(DTypeSize(dtype));
    if (shard_bytes > 0 && shard_bytes + bytes > so.max_shard_bytes) flush();
    shard.push_back({std::move(name), dtype, std::move(shape), RandomBytes(rng, n, mean, std, dtype)});
    shard_bytes += bytes;
    total_bytes += bytes;
  };
  const double kStd = 0.02;
  if (IsHybrid(p)) {
    WriteHybridLayers(p, vocab, add);
  } else {
  add("model.embed_tokens.weight", {vocab, p.hidden}, 0, kStd);
  for (int64_t l = 0; l < p.layers; ++l) {
    const std::string pre = fmt::format("model.layers.{}.", l);
    add(pre + "input_layernorm.weight", {p.hidden}, 1, 0.1);
    add(pre + "self_attn.q_proj.weight", {p.heads * p.head_dim, p.hidden}, 0, kStd);
    add(pre + "self_attn.k_proj.weight", {p.kv_heads * p.head_dim, p.hidden}, 0, kStd);
    add(pre + "self_attn.v_proj.weight", {p.kv_heads * p.head_dim, p.hidden}, 0, kStd);
    add(pre + "self_attn.o_proj.weight", {p.hidden, p.heads * p.head_dim}, 0, kStd);
    add(pre + "self_attn.q_norm.weight", {p.head_dim}, 1, 0.1);
    add(pre + "self_attn.k_norm.weight", {p.head_dim}, 1, 0.1);
    add(pre + "post_attention_layernorm.weight", {p.hidden}, 1, 0.1);
    if (p.arch == "qwen3_moe") {
      add(pre + "mlp.gate.weight", {p.experts, p.hidden}, 0, kStd);
      for (int64_t e = 0; e < p.experts; ++e) {
        const std::string ep = fmt::format("{}mlp.experts.{}.", pre, e);
        add(ep + "gate_proj.weight", {p.moe_ffn, p.hidden}, 0, kStd);
        add(ep + "up_proj.weight", {p.moe_ffn, p.hidden}, 0, kStd);
        add(ep + "down_proj.weight", {p.hidden, p.moe_ffn}, 0, kStd);
      }
    } else {
      add(pre + "mlp.gate_proj.weight", {p.ffn, p.hidden}, 0, kStd);
      add(pre + "mlp.up_proj.weight", {p.ffn, p.hidden}, 0, kStd);
      add(pre + "mlp.down_proj.weight", {p.hidden, p.ffn}, 0, kStd);
    }
  }
  add("model.norm.weight", {p.hidden}, 1, 0.1);
  if (!p.tied) add("lm_head.weight", {vocab, p.hidden}, 0, kStd);
  }

  flush();
  TERN_RETURN_IF_ERROR(write_status);
  auto rename = [&](const std::string& from, const std::string& to) -> Status {
    std::error_code rec;
    fs::rename(out / from, out / to, rec);
    if (rec) return Status::Errorf("synth: cannot rename {} to {}: {}", from, to, rec.message());
    return Status::Ok();
  };
  fs::remove(out / "model.safetensors.index.json", ec);
  if (shard_names.size() == 1) return rename("shard-1.tmp", "model.safetensors");
  fs::remove(out / "model.safetensors", ec);
  nlohmann::ordered_json index;
  index["metadata"] = {{"total_size", total_bytes}};
  for (size_t s = 0; s < shard_names.size(); ++s) {
    const std::string file = fmt::format("model-{:05d}-of-{:05d}.safetensors", s + 1, shard_names.size());
    for (const auto& name : shard_names[s]) index["weight_map"][name] = file;
    TERN_RETURN_IF_ERROR(rename(fmt::format("shard-{}.tmp", s + 1), file));
  }
  return WriteStringToFile((out / "model.safetensors.index.json").string(), index.dump(2) + "\n");
}

}  // namespace tern
