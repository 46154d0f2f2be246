#include "api/request_common.h"

#include <fmt/format.h>

#include <algorithm>

namespace tern::api::internal {

std::optional<PyNumber> ReadNumber(FieldReader& r, std::string_view key, bool as_float) {
  const Json* v = r.Get(key);
  if (!v) return std::nullopt;
  const std::optional<double> d = r.Float(key);
  if (!d) return std::nullopt;
  return PyNumber{*d, !as_float && v->is_number_integer()};
}

std::optional<PyNumber> ReadIntNumber(FieldReader& r, std::string_view key) {
  const std::optional<int64_t> i = r.Int(key);
  if (!i) return std::nullopt;
  return PyNumber{static_cast<double>(*i), true};
}

void ReadStop(FieldReader& r, std::string_view key, std::vector<std::string>* out) {
  const Json* v = r.Get(key);
  if (!v) return;
  if (v->is_string()) {
    out->push_back(v->get<std::string>());
    return;
  }
  const Loc loc = r.At(key);
  if (!v->is_array()) {
    r.ErrorAt(loc.Key("str"), "string_type", "Input should be a valid string");
    r.ErrorAt(loc.Key("list[str]"), "list_type", "Input should be a valid list");
    return;
  }
  bool ok = true;
  for (size_t i = 0; i < v->size(); ++i) {
    if (!(*v)[i].is_string()) {
      if (ok) r.ErrorAt(loc.Key("str"), "string_type", "Input should be a valid string");
      r.ErrorAt(loc.Key("list[str]").Index(i), "string_type", "Input should be a valid string");
      ok = false;
    }
  }
  if (ok)
    for (const auto& s : *v) out->push_back(s.get<std::string>());
}

std::optional<std::vector<int32_t>> ReadTokenIds(FieldReader& r, std::string_view key) {
  const Json* list = r.List(key);
  if (!list) return std::nullopt;
  std::vector<int32_t> ids;
  bool ok = true;
  for (size_t i = 0; i < list->size(); ++i) {
    const Loc loc = r.At(key).Index(i);
    const auto id = FieldReader::ToInt((*list)[i], loc, r.errors());
    if (!id) {
      ok = false;
    } else if (*id < INT32_MIN || *id > INT32_MAX) {
      r.ErrorAt(loc, "int_parsing_size", "Input should be a 32-bit token id");
      ok = false;
    } else {
      ids.push_back(static_cast<int32_t>(*id));
    }
  }
  if (!ok) return std::nullopt;
  return ids;
}

void ReadOpenAiSampling(FieldReader& r, SamplingRequest* s) {
  s->temperature = ReadNumber(r, "temperature", /*as_float=*/true);
  s->top_p = ReadNumber(r, "top_p", true);
  s->top_k = ReadIntNumber(r, "top_k");
  s->min_p = ReadNumber(r, "min_p", true);
  s->repetition_penalty = ReadNumber(r, "repetition_penalty", true);
  if (auto v = ReadNumber(r, "presence_penalty", true)) s->presence_penalty = *v;
  if (auto v = ReadNumber(r, "frequency_penalty", true)) s->frequency_penalty = *v;
  if (auto v = r.Int("min_tokens")) s->min_new_tokens = *v;
  ReadStop(r, "stop", &s->stop);
  if (auto ids = ReadTokenIds(r, "stop_token_ids")) s->stop_token_ids = std::move(*ids);
  if (auto v = r.Bool("ignore_eos")) s->ignore_eos = *v;
  if (auto v = r.Bool("skip_special_tokens")) s->skip_special_tokens = *v;
  if (auto v = r.Bool("no_stop_trim")) s->no_stop_trim = *v;
  s->seed = r.Int("seed");
  if (auto v = r.Int("n")) s->n = *v;
  if (const Json* bias = r.Dict("logit_bias")) {
    for (const auto& [k, v] : bias->items()) {
      const auto f = FieldReader::ToFloat(v, r.At("logit_bias").Key(k), r.errors());
      if (!f) continue;
      s->logit_bias.emplace_back(k, *f);
    }
  }
}

void ReadStreamOptions(FieldReader& r, bool* include_usage, bool* continuous_usage_stats) {
  const Json* opts = r.Dict("stream_options");
  if (!opts) return;
  FieldReader o(*opts, r.At("stream_options"), r.errors());
  if (auto v = o.Bool("include_usage")) *include_usage = *v;
  if (auto v = o.Bool("continuous_usage_stats")) *continuous_usage_stats = *v;
}

namespace {
// Pydantic's max_length error, counted in bytes.
std::optional<std::string> AtMost(FieldReader& r, std::string_view key, std::string s, size_t max_bytes) {
  if (s.size() <= max_bytes) return s;
  r.Error(key, "string_too_long", fmt::format("String should have at most {} characters", max_bytes));
  return std::nullopt;
}
}  // namespace

std::optional<std::string> ReadRid(FieldReader& r) {
  const Json* v = r.Get("rid");
  if (!v) return std::nullopt;
  if (v->is_string()) return AtMost(r, "rid", v->get<std::string>(), kMaxRidBytes);
  if (v->is_array() && v->size() == 1 && (*v)[0].is_string())
    return AtMost(r, "rid", (*v)[0].get<std::string>(), kMaxRidBytes);
  r.Error("rid", "string_type", "Input should be a valid string");
  return std::nullopt;
}

std::optional<std::string> ReadModel(FieldReader& r) {
  auto m = r.String("model");
  if (!m) return std::nullopt;
  return AtMost(r, "model", std::move(*m), kMaxModelBytes);
}

void ValidateResponseFormat(FieldReader& r) {
  const Json* rf = r.Dict("response_format");
  if (!rf) return;
  const Loc loc = r.At("response_format");
  const auto type_it = rf->find("type");
  if (type_it == rf->end() || type_it->is_null()) {
    r.ErrorAt(loc.Key("type"), "missing", "Field required");
    return;
  }
  if (!type_it->is_string() ||
      (*type_it != "text" && *type_it != "json_object" && *type_it != "json_schema" &&
       *type_it != "structural_tag")) {
    r.ErrorAt(loc.Key("type"), "literal_error",
              "Input should be 'text', 'json_object' or 'json_schema'");
    return;
  }
  if (*type_it == "json_schema") {
    const auto js = rf->find("json_schema");
    if (js != rf->end() && !js->is_null()) {
      if (!js->is_object()) {
        r.ErrorAt(loc.Key("json_schema"), "model_type",
                  "Input should be a valid dictionary or instance of JsonSchemaResponseFormat");
      } else if (!js->contains("name") || !(*js)["name"].is_string()) {
        r.ErrorAt(loc.Key("json_schema").Key("name"), "missing", "Field required");
      }
    }
  }
}

namespace {
constexpr const char* kOneConstraint = "Only one of regex, json_schema, or ebnf can be set.";
}  // namespace

std::optional<ApiError> ReadConstraint(const Json& body, SamplingRequest* s) {
  // Refused as /generate refuses it, never ignored: a client relying on it
  // would get text past where it asked to stop.
  if (const auto it = body.find("stop_regex"); it != body.end() && !it->is_null())
    return ApiError::BadRequest("'stop_regex' is not supported by this server yet.");
  std::vector<ConstraintRequest> found;
  if (const auto rf = body.find("response_format"); rf != body.end() && rf->is_object()) {
    const std::string type = rf->value("type", std::string("text"));
    if (type == "structural_tag")
      return ApiError::BadRequest(
          "response_format type 'structural_tag' is not supported by tern; use 'json_schema' or 'json_object' "
          "(or the regex / ebnf fields).");
    if (type == "json_object") found.push_back({ConstraintRequest::Kind::kJsonSchema, R"({"type":"object"})"});
    if (type == "json_schema") {
      // SGLang moves a top-level `schema` into json_schema.
      const Json* schema = nullptr;
      if (const auto js = rf->find("json_schema"); js != rf->end() && js->is_object() && js->contains("schema"))
        schema = &(*js)["schema"];
      else if (rf->contains("schema"))
        schema = &(*rf)["schema"];
      if (!schema || schema->is_null())
        return ApiError::BadRequest("schema_ is required for json_schema response format request.");
      if (!schema->is_object() && !schema->is_boolean())
        return ApiError::BadRequest("response_format.json_schema.schema must be a JSON Schema object.");
      found.push_back({ConstraintRequest::Kind::kJsonSchema, schema->dump()});
    }
  }
  for (const char* key : {"regex", "ebnf"}) {
    const auto it = body.find(key);
    if (it == body.end() || it->is_null()) continue;
    if (!it->is_string()) return ApiError::BadRequest(fmt::format("'{}' must be a string.", key));
    found.push_back({std::string(key) == "regex" ? ConstraintRequest::Kind::kRegex : ConstraintRequest::Kind::kEbnf,
                     it->get<std::string>()});
  }
  if (const auto it = body.find("json_schema"); it != body.end() && !it->is_null())
    return ApiError::BadRequest(
        "'json_schema' is a /generate sampling parameter; use response_format {\"type\": \"json_schema\", ...} here.");
  if (found.size() > 1) return ApiError::BadRequest(kOneConstraint);
  if (!found.empty()) s->constraint = std::move(found[0]);
  return std::nullopt;
}

std::optional<ApiError> ReadNativeConstraint(const Json& sp, SamplingRequest* s) {
  if (const auto it = sp.find("structural_tag"); it != sp.end() && !it->is_null())
    return ApiError::BadRequest("'structural_tag' constrained decoding is not supported by tern; use json_schema, regex or ebnf.");
  std::vector<ConstraintRequest> found;
  for (const auto& [key, kind] : {std::pair{"json_schema", ConstraintRequest::Kind::kJsonSchema},
                                  std::pair{"regex", ConstraintRequest::Kind::kRegex},
                                  std::pair{"ebnf", ConstraintRequest::Kind::kEbnf}}) {
    const auto it = sp.find(key);
    if (it == sp.end() || it->is_null()) continue;
    if (!it->is_string()) return ApiError::BadRequest(fmt::format("sampling_params.{} must be a string.", key));
    found.push_back({kind, it->get<std::string>()});
  }
  if (found.size() > 1) return ApiError::BadRequest(kOneConstraint);
  if (!found.empty()) s->constraint = std::move(found[0]);
  return std::nullopt;
}

std::optional<ApiError> CheckN(const SamplingRequest& s) {
  if (s.n < 1) return ApiError::BadRequest(fmt::format("n must be at least 1, got {}.", s.n));
  if (s.n > kMaxN) return ApiError::BadRequest(fmt::format("n must be at most {}, got {}.", kMaxN, s.n));
  return std::nullopt;
}

std::optional<ApiError> CheckTopLogprobs(std::string_view what, int64_t value, int64_t max) {
  if (value < 0) return ApiError::BadRequest(fmt::format("`{}` must be a positive value.", what));
  if (value > max) return ApiError::BadRequest(fmt::format("`{}` must be at most {}, got {}.", what, max, value));
  return std::nullopt;
}

}  // namespace tern::api::internal

namespace tern::api {

std::optional<ApiError> CheckPromptLogprobBudget(int64_t positions, int64_t top, std::string_view what) {
  if (positions <= 0) return std::nullopt;
  const int64_t entries = positions * (1 + std::max<int64_t>(top, 0));
  if (entries <= kMaxPromptLogprobEntries) return std::nullopt;
  return ApiError::BadRequest(fmt::format(
      "Prompt logprobs for {} tokens with {} alternatives each would be {} entries, more than the {} one request "
      "may ask for; lower {}.",
      positions, top, entries, kMaxPromptLogprobEntries, what));
}

std::optional<ApiError> CheckOutputLogprobBudget(int64_t choices, int64_t reply_tokens, int64_t top,
                                                 std::string_view what) {
  if (choices <= 0 || reply_tokens <= 0) return std::nullopt;
  // Each factor is bounded (n <= kMaxN, top <= kMaxTopLogprobsNum, tokens < 2^31): no overflow.
  const int64_t entries = choices * reply_tokens * (1 + std::max<int64_t>(top, 0));
  if (entries <= kMaxOutputLogprobEntries) return std::nullopt;
  return ApiError::BadRequest(fmt::format(
      "Logprobs for {} choice(s) of up to {} tokens with {} alternatives each would be {} entries, more than the {} "
      "one request may ask for; lower {}.",
      choices, reply_tokens, top, entries, kMaxOutputLogprobEntries, what));
}

}  // namespace tern::api
