// qwen3_coder parameter values -> JSON, by the tool's schema
// (Qwen3CoderDetector._convert_param_value in SGLang, the same in vLLM).
#include <cctype>
#include <cmath>

#include <fmt/format.h>

#include "api/json_parse.h"
#include "api/py_literal.h"
#include "api/py_text.h"
#include "api/tool_parser.h"

namespace tern::api {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// str(config[name]["type"]).strip().lower(), or "string" when the parameter
// has no type; nullopt when the parameter is not in the config.
std::optional<std::string> ParamType(std::string_view name, const Json& config) {
  if (!config.is_object()) return std::nullopt;
  const auto it = config.find(std::string(name));
  if (it == config.end()) return std::nullopt;
  if (!it->is_object() || !it->contains("type")) return std::string("string");
  const Json& t = (*it)["type"];
  std::string s = t.is_string() ? t.get<std::string>() : PyRepr(t);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t b = 0;
  while (b < s.size() && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  return Lower(s.substr(b));
}

bool IsStringType(const std::string& t) {
  return t == "string" || t == "str" || t == "text" || t == "varchar" || t == "char" || t == "enum";
}

std::string Quoted(std::string_view s) {
  std::string out;
  AppendPyJsonString(&out, s);
  return out;
}

// json.dumps of a converted object/literal; a non-finite float anywhere makes
// it fall back to the string form.
std::optional<std::string> DumpFinite(const Json& v) {
  std::string out = PyJsonDumps(v);
  bool finite = true;
  auto check = [&](auto&& self, const Json& x) -> void {
    if (x.is_number_float() && !std::isfinite(x.get<double>())) finite = false;
    else if (x.is_structured())
      for (const auto& e : x) self(self, e);
  };
  check(check, v);
  if (!finite) return std::nullopt;
  return out;
}

}  // namespace

Json XmlParamConfig(const std::vector<ToolSpec>& tools, std::string_view name) {
  for (const auto& t : tools) {
    if (t.name != name) continue;
    const Json& p = t.parameters;
    if (p.is_object() && p.contains("properties"))
      return p["properties"].is_object() ? p["properties"] : Json::object();
    if (p.is_object()) return p;
    return Json::object();
  }
  return Json::object();
}

bool IsStringXmlParameter(std::string_view name, const Json& config) {
  const auto t = ParamType(name, config);
  return !t || IsStringType(*t);
}

std::string ConvertXmlParameter(std::string_view value, std::string_view name, const Json& config) {
  if (Lower(value) == "null") return "null";
  const auto type = ParamType(name, config);
  if (!type || IsStringType(*type)) return Quoted(value);
  const std::string& t = *type;
  if (StartsWith(t, "int") || StartsWith(t, "uint") || StartsWith(t, "long") ||
      StartsWith(t, "short") || StartsWith(t, "unsigned")) {
    if (auto i = PyIntText(value)) return *i;
    return Quoted(value);
  }
  if (StartsWith(t, "num") || StartsWith(t, "float")) {
    const auto f = PyFloatText(value);
    if (!f || !std::isfinite(*f)) return Quoted(value);
    const std::string lower = Lower(value);
    const bool maybe_int = lower.find('.') == std::string::npos && lower.find('e') == std::string::npos;
    if (maybe_int && *f == std::floor(*f)) return fmt::format("{:.0f}", *f);
    return PyFloatRepr(*f);
  }
  if (t == "boolean" || t == "bool" || t == "binary") return Lower(value) == "true" ? "true" : "false";
  const bool structured = t == "object" || t == "array" || t == "arr" || StartsWith(t, "dict") ||
                          StartsWith(t, "list");
  if (structured && JsonNestingDepth(value) <= 200) {
    const Json v = Json::parse(value.begin(), value.end(), nullptr, false);
    if (!v.is_discarded())
      if (auto s = DumpFinite(v)) return *s;
  }
  if (auto lit = PyLiteralEval(value))
    if (auto s = DumpFinite(*lit)) return *s;
  return Quoted(value);
}

}  // namespace tern::api
