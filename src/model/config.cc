#include "model/config.h"

#include <algorithm>
#include <filesystem>
#include <limits>

#include <nlohmann/json.hpp>

#include "base/mapped_file.h"

namespace tern {
namespace {
using nlohmann::json;

// Reads optional fields with type checks; the first error is kept.
class Reader {
 public:
  Reader(const json& j, std::string source) : j_(j), source_(std::move(source)) {}

  template <typename T>
  void Get(const char* key, T& out, bool required = false) {
    auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) {
      if (required) Fail(fmt::format("missing required field \"{}\"", key));
      return;
    }
    if constexpr (std::is_same_v<T, bool>) {
      if (!it->is_boolean()) return Fail(fmt::format("\"{}\" must be a boolean", key));
    } else if constexpr (std::is_integral_v<T>) {
      if (!it->is_number_integer()) return Fail(fmt::format("\"{}\" must be an integer", key));
      // An unsigned JSON value past T's range would wrap (to a negative size, say).
      if (it->is_number_unsigned() && it->template get<uint64_t>() > uint64_t(std::numeric_limits<T>::max()))
        return Fail(fmt::format("\"{}\" value {} is out of range", key, it->dump()));
    } else if constexpr (std::is_floating_point_v<T>) {
      if (!it->is_number()) return Fail(fmt::format("\"{}\" must be a number", key));
    } else if constexpr (std::is_same_v<T, std::string>) {
      if (!it->is_string()) return Fail(fmt::format("\"{}\" must be a string", key));
    }
    out = it->get<T>();
  }
  // An id or a list of ids.
  void GetIds(const char* key, std::vector<int32_t>& out) {
    auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) return;
    out.clear();
    // Token ids are int32 everywhere downstream: a larger value must not wrap into range.
    auto push = [&](const json& v) {
      if (!v.is_number_integer()) return Fail(fmt::format("\"{}\" must hold integers", key)), false;
      const bool fits = v.is_number_unsigned() ? v.get<uint64_t>() <= uint64_t(INT32_MAX)
                                               : v.get<int64_t>() >= 0 && v.get<int64_t>() <= INT32_MAX;
      if (!fits) return Fail(fmt::format("\"{}\" value {} is not a token id (0 to {})", key, v.dump(), INT32_MAX)), false;
      out.push_back(int32_t(v.get<int64_t>()));
      return true;
    };
    if (it->is_number_integer()) {
      push(*it);
    } else if (it->is_array()) {
      for (const auto& v : *it)
        if (!push(v)) return;
    } else {
      Fail(fmt::format("\"{}\" must be an integer or a list of integers", key));
    }
  }
  void Fail(std::string msg) {
    if (status_.ok()) status_ = Status::Errorf("{}: {}", source_, msg);
  }
  const Status& status() const { return status_; }

 private:
  const json& j_;
  std::string source_;
  Status status_;
};

Result<json> ParseObject(const std::string& text, const std::string& source) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return Status::Errorf("{}: not valid JSON", source);
  if (!j.is_object()) return Status::Errorf("{}: expected a JSON object", source);
  return j;
}

}  // namespace

int64_t ModelConfig::RotaryDim() const { return int64_t(std::llround(double(head_dim) * partial_rotary_factor)); }

bool ModelConfig::IsLinearAttentionLayer(int64_t layer) const {
  if (!layer_types.empty()) return layer_types[size_t(layer)] == "linear_attention";
  if (full_attention_interval > 0) return (layer + 1) % full_attention_interval != 0;
  return false;
}

bool ModelConfig::IsMoeLayer(int64_t layer) const {
  if (num_experts <= 0) return false;
  if (std::find(mlp_only_layers.begin(), mlp_only_layers.end(), layer) != mlp_only_layers.end()) return false;
  return decoder_sparse_step > 0 && (layer + 1) % decoder_sparse_step == 0;
}

Result<ModelConfig> ParseModelConfig(const std::string& json_text, const std::string& source) {
  TERN_ASSIGN_OR_RETURN(json top, ParseObject(json_text, source));
  ModelConfig c;
  Reader top_reader(top, source);
  top_reader.Get("model_type", c.model_type);
  // The VLM wrapper keeps the language model's fields under text_config.
  const json* text = &top;
  if (auto it = top.find("text_config"); it != top.end() && it->is_object()) text = &*it;
  Reader r(*text, source);
  std::string inner_type;
  r.Get("model_type", inner_type);
  if (c.model_type.empty()) c.model_type = inner_type;
  r.Get("torch_dtype", c.torch_dtype);
  if (c.torch_dtype.empty()) r.Get("dtype", c.torch_dtype);
  if (c.torch_dtype.empty()) top_reader.Get("torch_dtype", c.torch_dtype);
  r.Get("hidden_size", c.hidden_size, true);
  r.Get("num_hidden_layers", c.num_hidden_layers, true);
  r.Get("num_attention_heads", c.num_attention_heads, true);
  c.num_key_value_heads = c.num_attention_heads;
  r.Get("num_key_value_heads", c.num_key_value_heads);
  r.Get("head_dim", c.head_dim);
  r.Get("intermediate_size", c.intermediate_size);
  r.Get("vocab_size", c.vocab_size, true);
  r.Get("max_position_embeddings", c.max_position_embeddings);
  r.Get("rms_norm_eps", c.rms_norm_eps);
  r.Get("rope_theta", c.rope_theta);
  r.Get("partial_rotary_factor", c.partial_rotary_factor);
  // Newer configs keep RoPE settings in rope_parameters (or rope_scaling).
  for (const char* key : {"rope_parameters", "rope_scaling"}) {
    auto it = text->find(key);
    if (it == text->end() || !it->is_object()) continue;
    Reader rp(*it, source + " " + key);
    rp.Get("rope_theta", c.rope_theta);
    rp.Get("partial_rotary_factor", c.partial_rotary_factor);
    std::string rope_type = "default";
    // The older spelling "type" (Qwen2.5's long-context recipe: {"type": "yarn", ...}),
    // which transformers still reads where rope_type is absent.
    rp.Get(it->contains("rope_type") ? "rope_type" : "type", rope_type);
    if (rope_type != "default" && rope_type != "mrope")
      return Status::Errorf("{}: rope_type \"{}\" is not supported (only \"default\")", source, rope_type);
    if (!rp.status().ok()) return rp.status();
  }
  top_reader.Get("tie_word_embeddings", c.tie_word_embeddings);
  r.Get("tie_word_embeddings", c.tie_word_embeddings);
  r.Get("attention_bias", c.attention_bias);
  r.Get("num_experts", c.num_experts);
  r.Get("num_experts_per_tok", c.num_experts_per_tok);
  r.Get("moe_intermediate_size", c.moe_intermediate_size);
  r.Get("norm_topk_prob", c.norm_topk_prob);
  r.Get("decoder_sparse_step", c.decoder_sparse_step);
  if (auto it = text->find("mlp_only_layers"); it != text->end() && it->is_array())
    for (const auto& v : *it)
      if (v.is_number_integer()) c.mlp_only_layers.push_back(v.get<int64_t>());
  if (auto it = text->find("layer_types"); it != text->end() && it->is_array())
    for (const auto& v : *it)
      if (v.is_string()) c.layer_types.push_back(v.get<std::string>());
  r.Get("full_attention_interval", c.full_attention_interval);
  r.Get("linear_num_key_heads", c.linear_num_key_heads);
  r.Get("linear_num_value_heads", c.linear_num_value_heads);
  r.Get("linear_key_head_dim", c.linear_key_head_dim);
  r.Get("linear_value_head_dim", c.linear_value_head_dim);
  r.Get("linear_conv_kernel_dim", c.linear_conv_kernel_dim);
  r.Get("shared_expert_intermediate_size", c.shared_expert_intermediate_size);
  r.Get("attn_output_gate", c.attn_output_gate);
  for (const char* key : {"num_nextn_predict_layers", "mtp_num_hidden_layers"}) {  // the second wins
    if (!text->contains(key) || (*text)[key].is_null()) continue;
    int64_t n = 0;
    r.Get(key, n);
    if (n < 0) return Status::Errorf("{}: \"{}\" must not be negative, got {}", source, key, n);
    c.mtp_num_hidden_layers = n;
  }
  r.Get("mtp_use_dedicated_embeddings", c.mtp_use_dedicated_embeddings);
  top_reader.GetIds("eos_token_id", c.eos_token_ids);
  r.GetIds("eos_token_id", c.eos_token_ids);
  std::vector<int32_t> bos;
  r.GetIds("bos_token_id", bos);
  if (!bos.empty()) c.bos_token_id = bos[0];
  if (!top_reader.status().ok()) return top_reader.status();
  if (!r.status().ok()) return r.status();

  // transformers' Qwen3Config defaults head_dim to 128; other configs derive it.
  if (c.head_dim == 0 && c.model_type == "qwen3") c.head_dim = 128;
  if (c.head_dim == 0 && c.num_attention_heads > 0) c.head_dim = c.hidden_size / c.num_attention_heads;
  TERN_RETURN_IF_ERROR(ValidateModelConfig(c, source));
  return c;
}

Result<ModelConfig> LoadModelConfig(const std::string& dir) {
  const std::string path = (std::filesystem::path(dir) / "config.json").string();
  TERN_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  TERN_ASSIGN_OR_RETURN(ModelConfig cfg, ParseModelConfig(text, path));
  TERN_ASSIGN_OR_RETURN(cfg.quant, LoadQuantConfig(dir, text));
  return cfg;
}

Result<GenerationDefaults> LoadGenerationDefaults(const std::string& dir) {
  const std::string path = (std::filesystem::path(dir) / "generation_config.json").string();
  GenerationDefaults g;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return g;
  TERN_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  TERN_ASSIGN_OR_RETURN(json j, ParseObject(text, path));
  Reader r(j, path);
  r.GetIds("eos_token_id", g.eos_token_ids);
  double d = 0;
  int64_t i = 0;
  bool b = false;
  if (j.contains("temperature")) { r.Get("temperature", d); g.temperature = d; }
  if (j.contains("top_p")) { r.Get("top_p", d); g.top_p = d; }
  if (j.contains("min_p")) { r.Get("min_p", d); g.min_p = d; }
  if (j.contains("repetition_penalty")) { r.Get("repetition_penalty", d); g.repetition_penalty = d; }
  if (j.contains("top_k")) { r.Get("top_k", i); g.top_k = i; }
  if (j.contains("do_sample")) { r.Get("do_sample", b); g.do_sample = b; }
  if (!r.status().ok()) return r.status();
  return g;
}

}  // namespace tern
