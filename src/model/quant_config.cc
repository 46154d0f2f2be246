#include "model/quant_config.h"

#include <fnmatch.h>

#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/mapped_file.h"

namespace tern {
namespace {

using json = nlohmann::json;

Result<QuantFormat> FormatOfAlgo(const std::string& algo, const std::string& where) {
  if (algo == "NVFP4") return QuantFormat::kNvfp4;
  if (algo == "FP8" || algo == "FP8_BLOCK" || algo == "FP8_PB_WO") return QuantFormat::kFp8;
  return Status::Errorf("{}: unsupported quant_algo \"{}\" (supported: NVFP4, FP8, MIXED_PRECISION)", where, algo);
}

std::vector<std::string> StringList(const json& j, const char* key, const std::string& where, Status* err) {
  std::vector<std::string> out;
  if (!j.contains(key) || j[key].is_null()) return out;
  if (!j[key].is_array()) {
    *err = Status::Errorf("{}: \"{}\" must be a list of strings", where, key);
    return out;
  }
  for (const auto& v : j[key]) {
    if (!v.is_string()) {
      *err = Status::Errorf("{}: \"{}\" must be a list of strings", where, key);
      return {};
    }
    out.push_back(v.get<std::string>());
  }
  return out;
}

std::string StringOr(const json& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
}

// The ModelOpt hf_quant_config.json "quantization" object.
Status ParseModelOptSection(const json& q, const std::string& where, QuantConfig& c) {
  if (!q.is_object()) return Status::Errorf("{}: \"quantization\" must be an object", where);
  c.quant_algo = StringOr(q, "quant_algo");
  if (c.quant_algo.empty()) return Status::Errorf("{}: missing \"quant_algo\"", where);
  if (q.contains("group_size") && q["group_size"].is_number_integer()) c.group_size = q["group_size"].get<int64_t>();
  c.kv_cache_quant_algo = StringOr(q, "kv_cache_quant_algo");
  Status err = Status::Ok();
  auto ex = StringList(q, "exclude_modules", where, &err);
  TERN_RETURN_IF_ERROR(err);
  c.exclude.insert(c.exclude.end(), ex.begin(), ex.end());
  if (c.quant_algo == "MIXED_PRECISION") {
    if (!q.contains("quantized_layers") || !q["quantized_layers"].is_object())
      return Status::Errorf("{}: MIXED_PRECISION needs a \"quantized_layers\" object", where);
    for (const auto& [name, layer] : q["quantized_layers"].items()) {
      const std::string algo = layer.is_object() ? StringOr(layer, "quant_algo") : std::string();
      TERN_ASSIGN_OR_RETURN(QuantFormat f, FormatOfAlgo(algo, fmt::format("{}: quantized_layers[\"{}\"]", where, name)));
      c.layers[name] = f;
    }
  } else {
    TERN_RETURN_IF_ERROR(FormatOfAlgo(c.quant_algo, where).status());
  }
  return Status::Ok();
}

// config.json "quantization_config": ModelOpt's compressed-tensors-like form
// (quant_method "modelopt") or the FP8 block form (quant_method "fp8").
Status ParseQuantizationConfig(const json& q, const std::string& where, QuantConfig& c) {
  if (!q.is_object()) return Status::Errorf("{}: \"quantization_config\" must be an object", where);
  const std::string method = StringOr(q, "quant_method");
  Status err = Status::Ok();
  if (method == "modelopt") {
    if (q.contains("quantization")) return ParseModelOptSection(q["quantization"], where, c);
    c.quant_algo = StringOr(q, "quant_algo");
    if (c.quant_algo.empty()) return Status::Errorf("{}: quantization_config lacks \"quant_algo\"", where);
    if (c.quant_algo != "MIXED_PRECISION") TERN_RETURN_IF_ERROR(FormatOfAlgo(c.quant_algo, where).status());
    c.exclude = StringList(q, "ignore", where, &err);
    TERN_RETURN_IF_ERROR(err);
    if (q.contains("kv_cache_scheme") && q["kv_cache_scheme"].is_object()) c.kv_cache_quant_algo = "FP8";
    if (q.contains("quantized_layers") && q["quantized_layers"].is_object()) {
      for (const auto& [name, layer] : q["quantized_layers"].items()) {
        const std::string algo = layer.is_object() ? StringOr(layer, "quant_algo") : std::string();
        TERN_ASSIGN_OR_RETURN(QuantFormat f, FormatOfAlgo(algo, where));
        c.layers[name] = f;
      }
    }
    return Status::Ok();
  }
  if (method == "fp8") {
    c.quant_algo = "FP8";
    if (q.contains("weight_block_size") && q["weight_block_size"].is_array()) {
      for (const auto& v : q["weight_block_size"]) {
        if (!v.is_number_integer()) return Status::Errorf("{}: weight_block_size must be two integers", where);
        c.weight_block_size.push_back(v.get<int64_t>());
      }
      if (c.weight_block_size != std::vector<int64_t>{128, 128})
        return Status::Errorf("{}: FP8 weight_block_size [{}] is not supported (only [128, 128])", where,
                              fmt::join(c.weight_block_size, ", "));
    }
    for (const char* key : {"modules_to_not_convert", "ignored_layers", "ignore"}) {
      auto ex = StringList(q, key, where, &err);
      TERN_RETURN_IF_ERROR(err);
      c.exclude.insert(c.exclude.end(), ex.begin(), ex.end());
    }
    return Status::Ok();
  }
  return Status::Errorf("{}: unsupported quantization_config quant_method \"{}\" (supported: modelopt, fp8)", where,
                        method);
}

}  // namespace

const char* QuantFormatName(QuantFormat f) {
  switch (f) {
    case QuantFormat::kNone:
      return "unquantized";
    case QuantFormat::kNvfp4:
      return "NVFP4";
    case QuantFormat::kFp8:
      return "FP8";
  }
  return "?";
}

std::optional<std::string> QuantConfig::ExcludedBy(const std::string& module) const {
  for (const auto& p : exclude) {
    // fnmatch without flags: '*' also matches '.', as Python's fnmatch does.
    if (fnmatch(p.c_str(), module.c_str(), 0) == 0) return p;
    // vLLM expands "foo*"-style prefixes to "foo" and "foo.*"; an exact
    // module name also covers its children ("lm_head" excludes "lm_head").
    if (module.size() > p.size() && module.compare(0, p.size(), p) == 0 && module[p.size()] == '.') return p;
  }
  return std::nullopt;
}

Status QuantConfig::CheckLinear(const std::string& module, QuantFormat detected) const {
  if (empty() || detected == QuantFormat::kNone) return Status::Ok();
  if (auto p = ExcludedBy(module))
    return Status::Errorf("'{}' is stored as {} but {} excludes it from quantization (pattern \"{}\")", module,
                          QuantFormatName(detected), source, *p);
  if (quant_algo == "MIXED_PRECISION") {
    auto it = layers.find(module);
    if (it != layers.end() && it->second != detected)
      return Status::Errorf("'{}' is stored as {} but {} lists it as {}", module, QuantFormatName(detected), source,
                            QuantFormatName(it->second));
    return Status::Ok();
  }
  const QuantFormat declared = quant_algo == "NVFP4" ? QuantFormat::kNvfp4 : QuantFormat::kFp8;
  if (declared != detected)
    return Status::Errorf("'{}' is stored as {} but {} declares quant_algo {}", module, QuantFormatName(detected),
                          source, quant_algo);
  return Status::Ok();
}

Result<QuantConfig> ParseQuantConfig(const std::string& config_json_text, const std::string& hf_quant_text,
                                     const std::string& source) {
  QuantConfig c;
  const json cfg = json::parse(config_json_text, nullptr, /*allow_exceptions=*/false);
  if (cfg.is_object()) {
    const json* q = nullptr;
    if (cfg.contains("quantization_config")) q = &cfg["quantization_config"];
    else if (cfg.contains("text_config") && cfg["text_config"].is_object() &&
             cfg["text_config"].contains("quantization_config"))
      q = &cfg["text_config"]["quantization_config"];
    if (q != nullptr && !q->is_null()) {
      TERN_RETURN_IF_ERROR(ParseQuantizationConfig(*q, source + "/config.json", c));
      c.source = "config.json quantization_config";
    }
  }
  if (!hf_quant_text.empty()) {
    const std::string where = source + "/hf_quant_config.json";
    const json h = json::parse(hf_quant_text, nullptr, false);
    if (h.is_discarded() || !h.is_object()) return Status::Errorf("{}: not a JSON object", where);
    if (!h.contains("quantization")) return Status::Errorf("{}: missing \"quantization\"", where);
    QuantConfig hc;
    TERN_RETURN_IF_ERROR(ParseModelOptSection(h["quantization"], where, hc));
    hc.weight_block_size = c.weight_block_size;
    hc.source = "hf_quant_config.json";
    c = std::move(hc);
  }
  if (!c.empty() && c.group_size != 16)
    return Status::Errorf("{}: NVFP4 group_size {} is not supported (only 16)", source, c.group_size);
  return c;
}

Result<QuantConfig> LoadQuantConfig(const std::string& dir, const std::string& config_json_text) {
  const std::filesystem::path hf = std::filesystem::path(dir) / "hf_quant_config.json";
  std::string hf_text;
  std::error_code ec;
  if (std::filesystem::exists(hf, ec)) {
    TERN_ASSIGN_OR_RETURN(hf_text, ReadFileToString(hf.string()));
  }
  return ParseQuantConfig(config_json_text, hf_text, dir);
}

}  // namespace tern
