// Chat `tools` and `tool_choice` (SGLang's Tool / Function / ToolChoice
// models) and the structural check of tool parameter schemas.
#include <set>

#include <fmt/format.h>

#include "api/chat_fields.h"
#include "api/py_text.h"

namespace tern::api::internal {
namespace {

constexpr int kMaxSchemaDepth = 64;

bool IsSchemaType(const std::string& t) {
  // JSON Schema's simple types plus the aliases SGLang's
  // normalize_json_schema_types rewrites before validating.
  static const std::set<std::string> kTypes = {
      "array", "boolean", "integer", "null", "number", "object", "string",
      // aliases
      "int", "float", "double", "str", "text", "varchar", "char", "enum", "bool", "dict",
      "list", "arr", "long", "short", "decimal", "uint", "binary"};
  return kTypes.count(t) > 0;
}

std::string NotOfType(const Json& v, const char* types) {
  return fmt::format("{} is not of type {}", PyRepr(v), types);
}

std::string Check(const Json& s, int depth, bool* too_deep);

std::string CheckSchemaMap(const Json& v, int depth, bool* too_deep) {
  if (!v.is_object()) return NotOfType(v, "'object'");
  for (const auto& [k, sub] : v.items()) {
    std::string e = Check(sub, depth + 1, too_deep);
    if (!e.empty() || *too_deep) return e;
  }
  return "";
}

std::string CheckSchemaList(const Json& v, int depth, bool* too_deep) {
  if (!v.is_array()) return NotOfType(v, "'array'");
  if (v.empty()) return fmt::format("{} should be non-empty", PyRepr(v));
  for (const auto& sub : v) {
    std::string e = Check(sub, depth + 1, too_deep);
    if (!e.empty() || *too_deep) return e;
  }
  return "";
}

std::string Check(const Json& s, int depth, bool* too_deep) {
  if (depth > kMaxSchemaDepth) {
    *too_deep = true;
    return "";
  }
  if (s.is_boolean()) return "";
  if (!s.is_object()) return NotOfType(s, "'object', 'boolean'");
  for (const auto& [key, v] : s.items()) {
    std::string e;
    if (key == "type") {
      if (v.is_string()) {
        if (!IsSchemaType(v.get<std::string>()))
          e = fmt::format("{} is not valid under any of the given schemas", PyRepr(v));
      } else if (v.is_array()) {
        std::set<std::string> seen;
        for (const auto& t : v) {
          if (!t.is_string() || !IsSchemaType(t.get<std::string>()) ||
              !seen.insert(t.get<std::string>()).second) {
            e = fmt::format("{} is not valid under any of the given schemas", PyRepr(v));
            break;
          }
        }
      } else {
        e = fmt::format("{} is not valid under any of the given schemas", PyRepr(v));
      }
    } else if (key == "properties" || key == "patternProperties" || key == "$defs" ||
               key == "definitions" || key == "dependentSchemas") {
      e = CheckSchemaMap(v, depth, too_deep);
    } else if (key == "items" || key == "additionalProperties" || key == "not" ||
               key == "contains" || key == "propertyNames" || key == "if" || key == "then" ||
               key == "else" || key == "unevaluatedItems" || key == "unevaluatedProperties" ||
               key == "additionalItems") {
      e = Check(v, depth + 1, too_deep);
    } else if (key == "anyOf" || key == "allOf" || key == "oneOf" || key == "prefixItems") {
      e = CheckSchemaList(v, depth, too_deep);
    } else if (key == "required") {
      if (!v.is_array()) {
        e = NotOfType(v, "'array'");
      } else {
        std::set<std::string> seen;
        for (const auto& name : v) {
          if (!name.is_string()) {
            e = NotOfType(name, "'string'");
            break;
          }
          if (!seen.insert(name.get<std::string>()).second) {
            e = fmt::format("{} has non-unique elements", PyRepr(v));
            break;
          }
        }
      }
    } else if (key == "enum") {
      if (!v.is_array()) e = NotOfType(v, "'array'");
    } else if (key == "title" || key == "description" || key == "pattern" || key == "format" ||
               key == "$ref" || key == "$id" || key == "$schema") {
      if (!v.is_string()) e = NotOfType(v, "'string'");
    } else if (key == "minimum" || key == "maximum" || key == "exclusiveMinimum" ||
               key == "exclusiveMaximum" || key == "multipleOf") {
      if (!v.is_number()) e = NotOfType(v, "'number'");
      else if (key == "multipleOf" && v.get<double>() <= 0)
        e = fmt::format("{} is less than or equal to the minimum of 0", PyRepr(v));
    } else if (key == "minLength" || key == "maxLength" || key == "minItems" ||
               key == "maxItems" || key == "minProperties" || key == "maxProperties" ||
               key == "minContains" || key == "maxContains") {
      if (!v.is_number_integer() && !(v.is_number_float() && v.get<double>() == int64_t(v.get<double>())))
        e = NotOfType(v, "'integer'");
      else if (v.get<double>() < 0)
        e = fmt::format("{} is less than the minimum of 0", PyRepr(v));
    } else if (key == "uniqueItems") {
      if (!v.is_boolean()) e = NotOfType(v, "'boolean'");
    }
    if (*too_deep) return "";
    if (!e.empty()) return e;
  }
  return "";
}

}  // namespace

std::string CheckToolSchema(const Json& schema, bool* too_deep) {
  *too_deep = false;
  return Check(schema, 0, too_deep);
}

void ReadTools(FieldReader& r, std::vector<ToolSpec>* tools) {
  const Json* list = r.List("tools");
  if (!list) return;
  for (size_t i = 0; i < list->size(); ++i) {
    const Json& tool = (*list)[i];
    const Loc loc = r.At("tools").Index(i);
    if (!tool.is_object()) {
      r.ErrorAt(loc, "model_attributes_type",
                "Input should be a valid dictionary or object to extract fields from");
      continue;
    }
    FieldReader tr(tool, loc, r.errors());
    const std::string type = tr.String("type").value_or("function");
    if (!tr.Has("function")) {
      tr.Error("function", "missing", "Field required");
      continue;
    }
    const Json* fn = tr.Dict("function");
    if (!fn) continue;
    FieldReader fr(*fn, loc.Key("function"), r.errors());
    ToolSpec spec;
    if (!fr.Has("name")) {
      fr.Error("name", "missing", "Field required");
      continue;
    }
    const auto name = fr.String("name");
    if (!name) continue;
    spec.name = *name;
    spec.description = fr.String("description");
    if (const Json* p = fr.Get("parameters")) spec.parameters = *p;
    spec.strict = fr.Bool("strict").value_or(false);
    Json function = Json::object();
    function["description"] = spec.description ? Json(*spec.description) : Json(nullptr);
    function["name"] = spec.name;
    function["parameters"] = spec.parameters;
    function["strict"] = spec.strict;
    spec.template_json = Json::object();
    spec.template_json["type"] = type;
    spec.template_json["function"] = std::move(function);
    tools->push_back(std::move(spec));
  }
}

void ReadToolChoice(FieldReader& r, bool have_tools, ToolChoice* out) {
  const Json* v = r.Get("tool_choice");
  if (!v) {
    out->mode = have_tools ? ToolChoiceMode::kAuto : ToolChoiceMode::kNone;
    return;
  }
  if (v->is_string()) {
    const std::string s = v->get<std::string>();
    if (s == "none") out->mode = ToolChoiceMode::kNone;
    else if (s == "auto") out->mode = ToolChoiceMode::kAuto;
    else if (s == "required") out->mode = ToolChoiceMode::kRequired;
    else
      r.ErrorAt(r.At("tool_choice").Key("literal['auto','required','none']"), "literal_error",
                "Input should be 'auto', 'required' or 'none'");
    return;
  }
  if (!v->is_object()) {
    r.ErrorAt(r.At("tool_choice").Key("ToolChoice"), "model_type",
              "Input should be a valid dictionary or instance of ToolChoice");
    r.ErrorAt(r.At("tool_choice").Key("literal['auto','required','none']"), "literal_error",
              "Input should be 'auto', 'required' or 'none'");
    return;
  }
  const Loc loc = r.At("tool_choice").Key("ToolChoice");
  FieldReader cr(*v, loc, r.errors());
  if (const auto type = cr.String("type"); type && *type != "function")
    cr.Error("type", "literal_error", "Input should be 'function'");
  if (!cr.Has("function")) {
    cr.Error("function", "missing", "Field required");
    return;
  }
  const Json* fn = cr.Dict("function");
  if (!fn) return;
  FieldReader fr(*fn, loc.Key("function"), r.errors());
  out->mode = ToolChoiceMode::kFunction;
  // A missing name compares as Python's None in SGLang's lookup.
  out->function_name = fr.String("name").value_or("None");
}

}  // namespace tern::api::internal
