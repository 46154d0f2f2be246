#include "tokenize/tokenizer_config.h"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "base/mapped_file.h"

namespace tern {
namespace {

Result<std::optional<std::string>> ParseTokenField(const nlohmann::json& root, const char* key) {
  auto it = root.find(key);
  if (it == root.end() || it->is_null()) return std::optional<std::string>();
  if (it->is_string()) return std::optional<std::string>(it->get<std::string>());
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) {
    return std::optional<std::string>((*it)["content"].get<std::string>());
  }
  return Status::Errorf("\"{}\" must be a string or an object with a string \"content\"", key);
}

Status ParseChatTemplate(const nlohmann::json& root, TokenizerConfig* c) {
  auto it = root.find("chat_template");
  if (it == root.end() || it->is_null()) return Status::Ok();
  if (it->is_string()) {
    c->chat_template = it->get<std::string>();
    return Status::Ok();
  }
  if (!it->is_array()) {
    return Status::Error("\"chat_template\" must be a string or a list of {name, template}");
  }
  for (const auto& entry : *it) {
    if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string() ||
        !entry.contains("template") || !entry["template"].is_string()) {
      return Status::Error("\"chat_template\" list entries must be {\"name\": .., \"template\": ..}");
    }
    c->named_chat_templates[entry["name"].get<std::string>()] = entry["template"].get<std::string>();
  }
  if (auto d = c->named_chat_templates.find("default"); d != c->named_chat_templates.end()) {
    c->chat_template = d->second;
  }
  return Status::Ok();
}

Status ParseBool(const nlohmann::json& root, const char* key, bool* out) {
  auto it = root.find(key);
  if (it == root.end() || it->is_null()) return Status::Ok();
  if (!it->is_boolean()) return Status::Errorf("\"{}\" must be a boolean", key);
  *out = it->get<bool>();
  return Status::Ok();
}

Status ParseMaxLength(const nlohmann::json& root, std::optional<int64_t>* out) {
  auto it = root.find("model_max_length");
  if (it == root.end() || it->is_null()) return Status::Ok();
  if (it->is_number_integer()) {
    // Unsigned values beyond int64 count as unlimited.
    if (it->is_number_unsigned() && it->get<uint64_t>() > uint64_t(INT64_MAX)) return Status::Ok();
    *out = it->get<int64_t>();
    return Status::Ok();
  }
  if (it->is_number_float()) {
    const double v = it->get<double>();
    if (v >= 9.2e18) return Status::Ok();  // transformers' VERY_LARGE_INTEGER (1e30)
    *out = int64_t(v);
    return Status::Ok();
  }
  return Status::Error("\"model_max_length\" must be a number");
}

Result<TokenizerConfig> ParseOrThrow(std::string_view config_json,
                                     std::optional<std::string> chat_template_file) {
  nlohmann::json root = nlohmann::json::parse(config_json, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return Status::Error("not valid JSON");
  if (!root.is_object()) return Status::Error("must be a JSON object");
  TokenizerConfig c;
  TERN_RETURN_IF_ERROR(ParseChatTemplate(root, &c));
  TERN_ASSIGN_OR_RETURN(c.bos_token, ParseTokenField(root, "bos_token"));
  TERN_ASSIGN_OR_RETURN(c.eos_token, ParseTokenField(root, "eos_token"));
  TERN_ASSIGN_OR_RETURN(c.pad_token, ParseTokenField(root, "pad_token"));
  TERN_ASSIGN_OR_RETURN(c.unk_token, ParseTokenField(root, "unk_token"));
  TERN_RETURN_IF_ERROR(ParseBool(root, "add_bos_token", &c.add_bos_token));
  TERN_RETURN_IF_ERROR(ParseBool(root, "add_eos_token", &c.add_eos_token));
  TERN_RETURN_IF_ERROR(ParseMaxLength(root, &c.model_max_length));
  if (chat_template_file) c.chat_template = std::move(*chat_template_file);
  return c;
}

}  // namespace

Result<TokenizerConfig> ParseTokenizerConfig(std::string_view config_json,
                                             std::optional<std::string> chat_template_file) {
  try {
    auto c = ParseOrThrow(config_json, std::move(chat_template_file));
    if (!c.ok()) return c.status().WithContext("tokenizer_config.json");
    return c;
  } catch (const std::exception& e) {  // nlohmann::json on shapes not foreseen
    return Status::Errorf("tokenizer_config.json: {}", e.what());
  }
}

Result<TokenizerConfig> LoadTokenizerConfig(const std::string& model_dir) {
  const std::filesystem::path dir(model_dir);
  const std::string config_path = (dir / "tokenizer_config.json").string();
  auto config = ReadFileToString(config_path);
  if (!config.ok()) return config.status();
  std::optional<std::string> jinja;
  const std::filesystem::path jinja_path = dir / "chat_template.jinja";
  std::error_code ec;
  if (std::filesystem::exists(jinja_path, ec)) {
    auto text = ReadFileToString(jinja_path.string());
    if (!text.ok()) return text.status();
    jinja = std::move(text).value();
  }
  auto parsed = ParseTokenizerConfig(*config, std::move(jinja));
  if (!parsed.ok()) return parsed.status().WithContext(config_path);
  return parsed;
}

}  // namespace tern
