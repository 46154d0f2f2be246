#include "tokenize/post_processor.h"

#include <nlohmann/json.hpp>

namespace tern::tok {
namespace {

Result<int32_t> ParseId(const nlohmann::json& j, std::string_view what) {
  if (!j.is_number_unsigned() || j.get<uint64_t>() > uint64_t(INT32_MAX)) {
    return Status::Errorf("{}: expected a token id", what);
  }
  return int32_t(j.get<uint64_t>());
}

// ["[CLS]", 101] as used by BertProcessing / RobertaProcessing.
Result<int32_t> ParseTokenPair(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_array() || it->size() != 2) {
    return Status::Errorf("post_processor: \"{}\" must be [token, id]", key);
  }
  return ParseId((*it)[1], key);
}

Status ParseTemplate(const nlohmann::json& j, PostProcessor* out) {
  auto single = j.find("single");
  if (single == j.end() || !single->is_array()) {
    return Status::Error("TemplateProcessing: missing \"single\" array");
  }
  const nlohmann::json empty = nlohmann::json::object();
  auto specials_it = j.find("special_tokens");
  const nlohmann::json& specials =
      (specials_it != j.end() && specials_it->is_object()) ? *specials_it : empty;
  std::vector<int32_t> prefix, suffix;
  int sequences = 0;
  for (const auto& piece : *single) {
    if (piece.contains("Sequence")) {
      const auto& seq = piece["Sequence"];
      if (!seq.contains("id") || seq["id"] != "A") {
        return Status::Error("TemplateProcessing: the single template may only use sequence A");
      }
      ++sequences;
      continue;
    }
    if (!piece.contains("SpecialToken") || !piece["SpecialToken"].contains("id") ||
        !piece["SpecialToken"]["id"].is_string()) {
      return Status::Errorf("TemplateProcessing: bad template piece {}", piece.dump());
    }
    const std::string name = piece["SpecialToken"]["id"].get<std::string>();
    auto tok = specials.find(name);
    if (tok == specials.end() || !tok->contains("ids") || !(*tok)["ids"].is_array()) {
      return Status::Errorf("TemplateProcessing: special token {:?} has no \"ids\"", name);
    }
    for (const auto& id : (*tok)["ids"]) {
      TERN_ASSIGN_OR_RETURN(int32_t v, ParseId(id, "TemplateProcessing ids"));
      (sequences == 0 ? prefix : suffix).push_back(v);
    }
  }
  if (sequences != 1) {
    return Status::Error("TemplateProcessing: the single template must hold $A exactly once");
  }
  // Wraps what earlier processors of a Sequence produced.
  out->prefix.insert(out->prefix.begin(), prefix.begin(), prefix.end());
  out->suffix.insert(out->suffix.end(), suffix.begin(), suffix.end());
  return Status::Ok();
}

Status Append(const nlohmann::json& j, PostProcessor* out) {
  if (j.is_null()) return Status::Ok();
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string()) {
    return Status::Error("post_processor: expected an object with a string \"type\"");
  }
  const std::string type = j["type"].get<std::string>();
  if (type == "ByteLevel") return Status::Ok();
  if (type == "TemplateProcessing") return ParseTemplate(j, out);
  if (type == "BertProcessing" || type == "RobertaProcessing") {
    TERN_ASSIGN_OR_RETURN(int32_t cls, ParseTokenPair(j, "cls"));
    TERN_ASSIGN_OR_RETURN(int32_t sep, ParseTokenPair(j, "sep"));
    out->prefix.insert(out->prefix.begin(), cls);
    out->suffix.push_back(sep);
    return Status::Ok();
  }
  if (type == "Sequence") {
    if (!j.contains("processors") || !j["processors"].is_array()) {
      return Status::Error("post_processor Sequence: missing \"processors\" array");
    }
    for (const auto& sub : j["processors"]) TERN_RETURN_IF_ERROR(Append(sub, out));
    return Status::Ok();
  }
  return Status::Errorf("post_processor type {:?} is not supported", type);
}

}  // namespace

Result<PostProcessor> PostProcessor::FromJson(const nlohmann::json& j) {
  PostProcessor p;
  TERN_RETURN_IF_ERROR(Append(j, &p));
  return p;
}

}  // namespace tern::tok
