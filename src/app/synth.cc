#include "app/synth.h"

#include <cmath>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/mapped_file.h"
#include "model/safetensors.h"
#include "tokenize/synthetic.h"
#include "tokenize/tokenizer.h"

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

nlohmann::ordered_json ConfigJson(const SynthPreset& p, DType dtype, int64_t vocab, int32_t eos, int32_t bos) {
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

}  // namespace

Status Synthesize(const SynthOptions& o) {
  const SynthPreset* preset = nullptr;
  std::vector<SynthPreset> presets = SynthPresets();
  std::string names;
  for (const auto& p : presets) {
    if (p.arch != o.arch) continue;
    names += (names.empty() ? "" : ", ") + p.name;
    if (p.name == o.preset) preset = &p;
  }
  if (names.empty()) return Status::Errorf("synth: unknown architecture \"{}\" (qwen3, qwen3_moe)", o.arch);
  if (!preset) return Status::Errorf("synth: no preset \"{}\" for {} (known: {})", o.preset, o.arch, names);
  if (o.dtype != DType::kF32 && o.dtype != DType::kBF16 && o.dtype != DType::kF16)
    return Status::Error("synth: --dtype must be f32, bf16 or f16");
  std::error_code ec;
  fs::create_directories(o.out_dir, ec);
  if (ec) return Status::Errorf("synth: cannot create {}: {}", o.out_dir, ec.message());
  const fs::path out(o.out_dir);

  // Tokenizer first: the vocabulary size of small presets follows it.
  std::string tok_json, tok_cfg;
  if (!o.tokenizer_dir.empty()) {
    TERN_ASSIGN_OR_RETURN(tok_json, ReadFileToString((fs::path(o.tokenizer_dir) / "tokenizer.json").string()));
    TERN_ASSIGN_OR_RETURN(tok_cfg, ReadFileToString((fs::path(o.tokenizer_dir) / "tokenizer_config.json").string()));
  } else {
    tok_json = MakeSyntheticTokenizerJson(preset->vocab > 0 ? 2048 : 512);
    tok_cfg = SyntheticTokenizerConfigJson();
  }
  TERN_ASSIGN_OR_RETURN(Tokenizer tok, Tokenizer::FromJson(tok_json));
  int64_t vocab = preset->vocab;
  if (vocab == 0) vocab = (int64_t(tok.vocab_size()) + 63) / 64 * 64;  // padded, like real checkpoints
  if (vocab < tok.vocab_size())
    return Status::Errorf("synth: preset vocab {} is smaller than the tokenizer's {}", vocab, tok.vocab_size());
  const int32_t eos = tok.TokenToId("<|im_end|>").value_or(tok.TokenToId("<|endoftext|>").value_or(0));
  const int32_t bos = tok.TokenToId("<|endoftext|>").value_or(0);
  TERN_RETURN_IF_ERROR(WriteStringToFile((out / "tokenizer.json").string(), tok_json));
  TERN_RETURN_IF_ERROR(WriteStringToFile((out / "tokenizer_config.json").string(), tok_cfg));

  const SynthPreset& p = *preset;
  TERN_RETURN_IF_ERROR(
      WriteStringToFile((out / "config.json").string(), ConfigJson(p, o.dtype, vocab, eos, bos).dump(2) + "\n"));
  nlohmann::ordered_json gen;
  gen["bos_token_id"] = bos;
  gen["eos_token_id"] = {eos, tok.TokenToId("<|endoftext|>").value_or(eos)};
  gen["do_sample"] = true;
  gen["temperature"] = 0.6;
  gen["top_p"] = 0.95;
  gen["top_k"] = 20;
  TERN_RETURN_IF_ERROR(WriteStringToFile((out / "generation_config.json").string(), gen.dump(2) + "\n"));

  // Tensors in HF order, written into shards of at most max_shard_bytes.
  // Full shards are written at once (under temporary names, renamed at the end
  // when their count is known) so memory holds one shard at a time.
  const std::map<std::string, std::string> meta = {{"format", "pt"}};
  Normal rng(o.seed);
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
    const int64_t bytes = n * int64_t(DTypeSize(o.dtype));
    if (shard_bytes > 0 && shard_bytes + bytes > o.max_shard_bytes) flush();
    shard.push_back({std::move(name), o.dtype, std::move(shape), RandomBytes(rng, n, mean, std, o.dtype)});
    shard_bytes += bytes;
    total_bytes += bytes;
  };
  const double kStd = 0.02;
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
