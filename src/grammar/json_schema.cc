#include "grammar/json_schema.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>

#include "grammar/ebnf_parser.h"
#include "grammar/json_schema_numbers.h"
#include "grammar/regex_parser.h"

namespace tern::grammar {
namespace {

using Json = nlohmann::ordered_json;

const std::set<std::string>& Annotations() {
  static const std::set<std::string> k = {"title",    "description", "default",    "examples",   "$comment",
                                          "$schema",  "$id",         "deprecated", "readOnly",   "writeOnly",
                                          "$defs",    "definitions", "contentMediaType", "contentEncoding",
                                          "strict",   "name"};
  return k;
}
const std::set<std::string>& Supported() {
  static const std::set<std::string> k = {
      "type",  "properties", "required",  "additionalProperties", "enum",     "const",   "items",
      "prefixItems", "minItems", "maxItems", "minLength",         "maxLength", "pattern", "format",
      "minimum", "maximum",  "exclusiveMinimum", "exclusiveMaximum", "anyOf",   "oneOf",   "allOf",
      "$ref",  "nullable",   "uniqueItems", "minProperties"};
  return k;
}

// Formats as ajv-formats' "full" mode checks them (dates with real month lengths and leap years).
std::optional<std::string> FormatRegex(const std::string& f) {
  const std::string d28 = "(0[1-9]|1[0-9]|2[0-8])";
  const std::string year = "[0-9]{4}";
  const std::string leap = "([0-9]{2}(0[48]|[2468][048]|[13579][26])|(0[48]|[2468][048]|[13579][26])00)";
  const std::string date = "(" + year + "-((0[13578]|1[02])-(" + d28 + "|29|30|31)|(0[469]|11)-(" + d28 +
                           "|29|30)|02-" + d28 + ")|" + leap + "-02-29)";
  const std::string time =
      "([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]{1,6})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])";
  if (f == "date") return date;
  if (f == "time") return time;
  if (f == "date-time") return date + "T" + time;
  if (f == "uuid") return "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}";
  if (f == "email")
    return "[a-z0-9!#$%&'*+/=?^_`{|}~-]+(\\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*@([a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?\\.)+"
           "[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?";
  if (f == "ipv4") return "((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])";
  if (f == "hostname") return "[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?(\\.[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?)*";
  return std::nullopt;
}

class Compiler {
 public:
  Compiler(const Json& root, const JsonSchemaOptions& o, std::string_view prefix)
      : root_(root), o_(o), p_(prefix) {}

  Result<std::string> Run() {
    BasicRules();
    TERN_ASSIGN_OR_RETURN(std::string body, Visit(root_, "#", 0));
    out_ = p_ + "root ::= " + body + "\n" + out_;
    return out_;
  }

 private:
  std::string R(const std::string& name) const { return p_ + name; }
  void Add(const std::string& name, const std::string& body) { out_ += R(name) + " ::= " + body + "\n"; }

  void BasicRules() {
    const char* ws = o_.whitespace == JsonSchemaOptions::Whitespace::kAny ? "[ \\t\\n]{0,16}" : "\"\"";
    Add("ws", ws);
    Add("comma", o_.whitespace == JsonSchemaOptions::Whitespace::kSpaced ? "\", \"" : "\",\" " + R("ws"));
    Add("colon", o_.whitespace == JsonSchemaOptions::Whitespace::kSpaced ? "\": \"" : "\":\" " + R("ws"));
    Add("char", "[^\"\\\\\\x00-\\x1f] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4})");
    Add("string", "\"\\\"\" " + R("char") + "* \"\\\"\"");
    Add("integer", "\"-\"? (\"0\" | [1-9] [0-9]*)");
    Add("number", R("integer") + " (\".\" [0-9]+)? ([eE] [+-]? [0-9]+)?");
    Add("boolean", "\"true\" | \"false\"");
    Add("null", "\"null\"");
    Add("array", "\"[\" " + R("ws") + " (" + R("value") + " (" + R("comma") + " " + R("value") + ")*)? " + R("ws") +
                     " \"]\"");
    Add("pair", R("string") + " " + R("colon") + " " + R("value"));
    Add("object", "\"{\" " + R("ws") + " (" + R("pair") + " (" + R("comma") + " " + R("pair") + ")*)? " + R("ws") +
                      " \"}\"");
    Add("value", R("object") + " | " + R("array") + " | " + R("string") + " | " + R("number") + " | " +
                     R("boolean") + " | " + R("null"));
  }

  Status Unsupported(const std::string& path, const std::string& what) {
    return Status::Errorf("JSON schema at {}: {}", path, what);
  }

  // The literal JSON text of a value, in the grammar's white space style.
  std::string Literal(const Json& v) const {
    std::string s;
    if (o_.whitespace == JsonSchemaOptions::Whitespace::kSpaced) {
      s = Spaced(v);
    } else {
      s = v.dump(-1, ' ', false, Json::error_handler_t::replace);
    }
    return EbnfQuote(s);
  }
  static std::string Spaced(const Json& v) {
    if (v.is_object()) {
      std::string s = "{";
      bool first = true;
      for (const auto& [k, x] : v.items()) {
        s += (first ? "" : ", ") + Json(k).dump() + ": " + Spaced(x);
        first = false;
      }
      return s + "}";
    }
    if (v.is_array()) {
      std::string s = "[";
      for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + Spaced(v[i]);
      return s + "]";
    }
    return v.dump(-1, ' ', false, Json::error_handler_t::replace);
  }

  Result<const Json*> Resolve(const std::string& ref, const std::string& path) {
    if (ref.empty() || ref[0] != '#') return Unsupported(path, fmt::format("$ref '{}' is not a local reference ('#...')", ref));
    try {
      const Json::json_pointer ptr(ref.substr(1));
      return &root_.at(ptr);
    } catch (const std::exception&) {
      return Unsupported(path, fmt::format("$ref '{}' does not resolve", ref));
    }
  }

  Result<std::string> RefRule(const std::string& ref, const std::string& path) {
    if (const auto it = refs_.find(ref); it != refs_.end()) return it->second;
    TERN_ASSIGN_OR_RETURN(const Json* target, Resolve(ref, path));
    const std::string name = R(fmt::format("ref{}", refs_.size()));
    refs_[ref] = name;
    if (refs_.size() > 10000) return Unsupported(path, "too many $ref targets");
    TERN_ASSIGN_OR_RETURN(std::string body, Visit(*target, ref, 0));
    out_ += name + " ::= " + body + "\n";
    return name;
  }

  // allOf: the members merged into one schema (object keywords combined).
  Result<Json> MergeAllOf(const Json& s, const std::string& path, int depth) {
    // Each member's own allOf is merged again wherever it is referenced: bounded
    // like Visit (two $refs to the one below, 60 deep, were 2^60 merges).
    if (++work_ > kMaxWork) return Unsupported(path, "the schema expands to too large a grammar");
    Json merged = Json::object();
    for (const auto& [k, v] : s.items())
      if (k != "allOf") merged[k] = v;
    for (size_t i = 0; i < s["allOf"].size(); ++i) {
      const Json* m = &s["allOf"][i];
      for (int hops = 0; m->is_object() && m->contains("$ref") && hops < 32; ++hops) {
        if (m->size() != 1) return Unsupported(path, "allOf member with $ref and other keywords is not supported");
        TERN_ASSIGN_OR_RETURN(m, Resolve((*m)["$ref"].get<std::string>(), path));
      }
      if (m->is_boolean()) {
        if (!m->get<bool>()) merged["not_satisfiable"] = true;
        continue;
      }
      if (!m->is_object()) return Unsupported(path, "allOf members must be schemas");
      Json member = *m;
      if (member.contains("allOf")) {
        if (depth > o_.max_depth) return Unsupported(path, "allOf nested too deeply");
        TERN_ASSIGN_OR_RETURN(member, MergeAllOf(member, path, depth + 1));
      }
      for (const auto& [k, v] : member.items()) {
        if (Annotations().count(k)) continue;
        if (!merged.contains(k)) {
          merged[k] = v;
        } else if (k == "properties") {
          for (const auto& [pk, pv] : v.items()) {
            if (merged[k].contains(pk) && merged[k][pk] != pv)
              return Unsupported(path, fmt::format("allOf members give property '{}' different schemas", pk));
            merged[k][pk] = pv;
          }
        } else if (k == "required") {
          for (const auto& r : v)
            if (std::find(merged[k].begin(), merged[k].end(), r) == merged[k].end()) merged[k].push_back(r);
        } else if (k == "additionalProperties" && v.is_boolean() && !v.get<bool>()) {
          merged[k] = false;
        } else if (merged[k] != v) {
          return Unsupported(path, fmt::format("allOf members with different '{}' are not supported", k));
        }
      }
    }
    return merged;
  }

  Result<std::string> Visit(const Json& s, const std::string& path, int depth) {
    if (depth > o_.max_depth) return Unsupported(path, fmt::format("nested deeper than {} levels", o_.max_depth));
    // Across $refs too: depth restarts at each $ref target, and a chain of
    // 9,000 $defs each holding the next once overflowed the stack (a crash).
    if (active_ >= kMaxActive)
      return Unsupported(path, fmt::format("nested deeper than {} levels, counting through $ref", kMaxActive));
    // And the work bounded: anyOf with sibling keywords compiles each branch
    // with them, so nesting multiplies (3^21 branches from a few kilobytes).
    if (++work_ > kMaxWork || out_.size() > kMaxGrammarText)
      return Unsupported(path, "the schema expands to too large a grammar");
    ++active_;
    struct Leave {
      int& n;
      ~Leave() { --n; }
    } leave{active_};
    // Every subschema's text counted as it returns (a parent's includes its
    // children's, so this over-counts nesting, never under-counts): the
    // branches of an anyOf beside a 1 MB enum each carried the megabyte in
    // locals that the grammar-size check on out_ never saw.
    Result<std::string> body = VisitBody(s, path, depth);
    if (body.ok() && (bytes_ += body->size()) > kMaxGrammarText)
      return Unsupported(path, "the schema expands to too large a grammar");
    return body;
  }

  Result<std::string> VisitBody(const Json& s, const std::string& path, int depth) {
    if (s.is_boolean()) return s.get<bool>() ? R("value") : std::string("[]");
    if (!s.is_object()) return Unsupported(path, "a schema must be an object or a boolean");
    for (const auto& [k, v] : s.items())
      if (!Annotations().count(k) && !Supported().count(k))
        return Unsupported(path, fmt::format("unsupported keyword '{}'", k));
    if (s.contains("not_satisfiable")) return std::string("[]");
    if (s.contains("allOf")) {
      if (!s["allOf"].is_array() || s["allOf"].empty()) return Unsupported(path, "allOf must be a non-empty array");
      TERN_ASSIGN_OR_RETURN(Json merged, MergeAllOf(s, path, depth));
      return Visit(merged, path, depth + 1);
    }
    std::vector<std::string> constraint_keys;
    for (const auto& [k, v] : s.items())
      if (!Annotations().count(k)) constraint_keys.push_back(k);
    // {} or annotations only: any JSON value, as the schema `true` is (and
    // xgrammar's basic_any). Strict mode closes the objects of schemas that
    // list properties; here it made every object empty ({"description": ...}
    // on a free-form field allowed only {}).
    if (constraint_keys.empty()) return R("value");
    if (s.contains("$ref")) {
      if (constraint_keys.size() > 1)
        return Unsupported(path, "keywords beside $ref are not supported (wrap them in allOf)");
      if (!s["$ref"].is_string()) return Unsupported(path, "$ref must be a string");
      return RefRule(s["$ref"].get<std::string>(), path);
    }
    for (const char* k : {"anyOf", "oneOf"}) {
      if (!s.contains(k)) continue;
      if (!s[k].is_array() || s[k].empty()) return Unsupported(path, fmt::format("{} must be a non-empty array", k));
      // Keywords beside anyOf/oneOf apply to every branch: each branch is merged with them (allOf).
      Json base = Json::object();
      for (const std::string& other : constraint_keys)
        if (other != k && other != "nullable") base[other] = s[other];
      std::string alts;
      for (size_t i = 0; i < s[k].size(); ++i) {
        const Json branch = base.empty() ? s[k][i] : Json{{"allOf", Json::array({base, s[k][i]})}};
        TERN_ASSIGN_OR_RETURN(std::string a, Visit(branch, fmt::format("{}/{}/{}", path, k, i), depth + 1));
        alts += (i ? " | " : "") + a;
      }
      if (s.value("nullable", false)) alts += " | " + R("null");
      return "(" + alts + ")";
    }
    // Types allowed.
    std::set<std::string> types;
    if (s.contains("type")) {
      const Json& t = s["type"];
      for (const Json& x : t.is_array() ? t : Json::array({t})) {
        if (!x.is_string()) return Unsupported(path, "type must be a string or an array of strings");
        const std::string name = x.get<std::string>();
        static const std::set<std::string> kTypes = {"null", "boolean", "integer", "number", "string", "array", "object"};
        if (!kTypes.count(name)) return Unsupported(path, fmt::format("unknown type '{}'", name));
        types.insert(name);
      }
    } else if (o_.strict) {
      auto has = [&](std::initializer_list<const char*> ks) {
        for (const char* k : ks)
          if (s.contains(k)) return true;
        return false;
      };
      if (has({"properties", "required", "additionalProperties", "minProperties"})) types.insert("object");
      if (has({"items", "prefixItems", "minItems", "maxItems", "uniqueItems"})) types.insert("array");
      if (has({"minLength", "maxLength", "pattern", "format"})) types.insert("string");
      if (has({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})) types.insert("number");
    }
    const bool any_type = types.empty();
    if (any_type) types = {"null", "boolean", "number", "string", "array", "object"};
    if (s.value("nullable", false)) types.insert("null");
    if (types.count("number")) types.erase("integer");

    if (s.contains("enum") || s.contains("const")) {
      std::vector<Json> values;
      if (s.contains("const")) values.push_back(s["const"]);
      if (s.contains("enum")) {
        if (!s["enum"].is_array()) return Unsupported(path, "enum must be an array");
        for (const Json& v : s["enum"])
          if (!s.contains("const") || v == s["const"]) values.push_back(v);
      }
      for (const std::string& k : constraint_keys)
        if (k != "enum" && k != "const" && k != "type" && k != "nullable")
          return Unsupported(path, fmt::format("keyword '{}' beside enum/const is not supported", k));
      std::string alts;
      for (const Json& v : values) {
        const std::string t = v.is_null() ? "null" : v.is_boolean() ? "boolean" : v.is_number_integer() ? "integer"
                              : v.is_number() ? "number" : v.is_string() ? "string" : v.is_array() ? "array" : "object";
        const bool ok = types.count(t) || (t == "integer" && types.count("number")) ||
                        (t == "number" && types.count("integer") && std::floor(v.get<double>()) == v.get<double>());
        if (!ok) continue;
        alts += (alts.empty() ? "" : " | ") + Literal(v);
      }
      if (alts.empty()) return std::string("[]");
      return "(" + alts + ")";
    }

    std::vector<std::string> branches;
    for (const std::string& t : types) {
      Result<std::string> b = std::string();
      if (t == "null") b = R("null");
      else if (t == "boolean") b = R("boolean");
      else if (t == "integer" || t == "number") b = Number(s, path, t == "integer");
      else if (t == "string") b = String(s, path);
      else if (t == "array") b = Array(s, path, depth);
      else b = Object(s, path, depth);
      if (!b.ok()) return b.status();
      if (!b->empty()) branches.push_back(*b);
    }
    if (branches.empty()) return std::string("[]");
    std::string out;
    for (size_t i = 0; i < branches.size(); ++i) out += (i ? " | " : "") + branches[i];
    return branches.size() == 1 ? out : "(" + out + ")";
  }

  Result<std::string> Number(const Json& s, const std::string& path, bool integer) {
    std::optional<internal::Bound> lo, hi;
    for (const char* k : {"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"}) {
      if (!s.contains(k)) continue;
      const Json& v = s[k];
      if (!v.is_number()) return Unsupported(path, fmt::format("'{}' must be a number", k));
      const double d = v.get<double>();
      if (!(std::abs(d) < 1e18)) return Unsupported(path, fmt::format("'{}' of {} is out of the supported range", k, d));
      const bool is_lo = k[0] == 'm' ? std::string(k) == "minimum" : std::string(k) == "exclusiveMinimum";
      const bool excl = k[0] == 'e';
      if (std::floor(d) != d && !integer)
        return Unsupported(path, fmt::format("'{}' with a fractional value on a number is not supported", k));
      internal::Bound b;
      if (integer) {  // integer bounds: inclusive after rounding inward
        b.value = int64_t(is_lo ? (excl ? std::floor(d) + 1 : std::ceil(d)) : (excl ? std::ceil(d) - 1 : std::floor(d)));
        b.exclusive = false;
      } else {
        b = {int64_t(d), excl};
      }
      auto& slot = is_lo ? lo : hi;
      if (!slot) slot = b;
      else if (is_lo ? (b.value > slot->value || (b.value == slot->value && b.exclusive))
                     : (b.value < slot->value || (b.value == slot->value && b.exclusive)))
        slot = b;
    }
    if (!lo && !hi) return R(integer ? "integer" : "number");
    std::string e;
    if (integer) {
      e = internal::IntegerRange(lo ? std::optional<int64_t>(lo->value) : std::nullopt,
                                 hi ? std::optional<int64_t>(hi->value) : std::nullopt);
    } else {
      e = internal::NumberRange(lo, hi);
    }
    return e.empty() ? std::string("[]") : e;
  }

  Result<std::string> String(const Json& s, const std::string& path) {
    const bool has_len = s.contains("minLength") || s.contains("maxLength");
    if (s.contains("pattern") || s.contains("format")) {
      if (has_len) return Unsupported(path, "minLength/maxLength together with pattern or format are not supported");
      if (s.contains("pattern") && s.contains("format"))
        return Unsupported(path, "pattern together with format is not supported");
      std::string re;
      bool search = false;
      if (s.contains("pattern")) {
        if (!s["pattern"].is_string()) return Unsupported(path, "pattern must be a string");
        re = s["pattern"].get<std::string>();
        search = true;
      } else {
        if (!s["format"].is_string()) return Unsupported(path, "format must be a string");
        const auto f = FormatRegex(s["format"].get<std::string>());
        if (!f) return Unsupported(path, fmt::format("unsupported format '{}'", s["format"].get<std::string>()));
        re = *f;
      }
      TERN_ASSIGN_OR_RETURN(Expr e, ParseRegex(re, {.search = search, .json_string = true}));
      const std::string name = R(fmt::format("pattern{}", patterns_++));
      out_ += name + " ::= \"\\\"\" (" + ToEbnf(e) + ") \"\\\"\"\n";
      return name;
    }
    if (!has_len) return R("string");
    int64_t lo = 0, hi = -1;
    if (s.contains("minLength")) {
      if (!s["minLength"].is_number_unsigned()) return Unsupported(path, "minLength must be a non-negative integer");
      lo = s["minLength"].get<int64_t>();
    }
    if (s.contains("maxLength")) {
      if (!s["maxLength"].is_number_unsigned()) return Unsupported(path, "maxLength must be a non-negative integer");
      hi = s["maxLength"].get<int64_t>();
    }
    if (lo > 10000 || hi > 10000) return Unsupported(path, "minLength/maxLength above 10000 are not supported");
    if (hi >= 0 && hi < lo) return std::string("[]");
    return fmt::format("(\"\\\"\" {}{{{},{}}} \"\\\"\")", R("char"), lo, hi < 0 ? "" : std::to_string(hi));
  }

  Result<std::string> Array(const Json& s, const std::string& path, int depth) {
    if (s.contains("uniqueItems") && s["uniqueItems"] != false) return Unsupported(path, "uniqueItems: true is not supported");
    std::vector<std::string> prefix;
    if (s.contains("prefixItems")) {
      if (!s["prefixItems"].is_array()) return Unsupported(path, "prefixItems must be an array");
      for (size_t i = 0; i < s["prefixItems"].size(); ++i) {
        TERN_ASSIGN_OR_RETURN(std::string e, Visit(s["prefixItems"][i], fmt::format("{}/prefixItems/{}", path, i), depth + 1));
        prefix.push_back(e);
      }
    }
    std::optional<std::string> rest;
    if (s.contains("items")) {
      if (s["items"].is_array()) return Unsupported(path, "items as an array (draft 4) is prefixItems in 2020-12");
      TERN_ASSIGN_OR_RETURN(std::string e, Visit(s["items"], path + "/items", depth + 1));
      if (e != "[]") rest = e;
    } else if (!(o_.strict && !prefix.empty())) {
      rest = R("value");
    }
    int64_t lo = 0, hi = -1;
    if (s.contains("minItems")) {
      if (!s["minItems"].is_number_unsigned()) return Unsupported(path, "minItems must be a non-negative integer");
      lo = s["minItems"].get<int64_t>();
    }
    if (s.contains("maxItems")) {
      if (!s["maxItems"].is_number_unsigned()) return Unsupported(path, "maxItems must be a non-negative integer");
      hi = s["maxItems"].get<int64_t>();
    }
    if (lo > 10000 || hi > 10000) return Unsupported(path, "minItems/maxItems above 10000 are not supported");
    const int64_t P = int64_t(prefix.size());
    if (!rest) hi = hi < 0 ? P : std::min(hi, P);
    if (hi >= 0 && hi < lo) return std::string("[]");
    // After i items: the grammar of the items that may follow.
    auto item = [&](int64_t i) { return i < P ? prefix[size_t(i)] : *rest; };
    std::function<std::string(int64_t)> tail = [&](int64_t i) -> std::string {
      if (hi >= 0 && i >= hi) return "";
      if (i >= P) {
        const int64_t need = std::max<int64_t>(0, lo - i);
        const std::string more = hi < 0 ? "" : std::to_string(hi - i);
        return fmt::format("({} {}){{{},{}}}", R("comma"), *rest, need, more);
      }
      const std::string next = fmt::format("{} {} {}", R("comma"), item(i), tail(i + 1));
      return i < lo ? next : "(" + next + ")?";
    };
    std::string body;
    if (hi != 0 && (P > 0 || rest)) body = item(0) + " " + tail(1);
    std::string out = "\"[\" " + R("ws") + " ";
    if (body.empty()) return out + "\"]\"";
    return out + (lo > 0 ? body : "(" + body + ")?") + " " + R("ws") + " \"]\"";
  }

  // A key that is none of `names` (the declared properties).
  std::string OtherKey(const std::vector<std::string>& names) {
    const std::string name = R(fmt::format("otherkey{}", other_keys_++));
    // Trie of the names' JSON bodies; at each node: end the key (if no name ends
    // here), leave the trie with another character, or follow a child.
    struct Node {
      std::map<std::string, int> next;  // one character (its JSON form) -> node
      bool end = false;
    };
    std::vector<Node> trie(1);
    for (const std::string& n : names) {
      const std::string body = Json(n).dump().substr(1);  // without the opening quote; ends with '"'
      int cur = 0;
      size_t i = 0;
      while (i + 1 < body.size()) {
        size_t len = body[i] == '\\' ? (body[i + 1] == 'u' ? 6 : 2) : 1;
        const unsigned char c = static_cast<unsigned char>(body[i]);
        if (c >= 0x80) len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
        const std::string ch = body.substr(i, len);
        i += len;
        auto it = trie[size_t(cur)].next.find(ch);
        if (it == trie[size_t(cur)].next.end()) {
          trie.emplace_back();
          it = trie[size_t(cur)].next.emplace(ch, int(trie.size() - 1)).first;
        }
        cur = it->second;
      }
      trie[size_t(cur)].end = true;
    }
    for (size_t i = 0; i < trie.size(); ++i) {
      std::vector<std::string> alts;
      if (!trie[i].end) alts.push_back("\"\\\"\"");
      std::string excluded;
      std::vector<std::string> escaped;
      for (const auto& [ch, child] : trie[i].next) {
        alts.push_back(EbnfQuote(ch) + " " + name + "_" + std::to_string(child));
        if (ch.size() == 1 && ch[0] != '\\') excluded += ch == "]" || ch == "-" || ch == "^" ? "\\" + ch : ch;
        else escaped.push_back(ch);
      }
      // Any other plain character, or any escape (escaped forms of names are not excluded).
      std::string other = "[^\"\\\\\\x00-\\x1f";
      for (char c : excluded) other += c == '\\' ? std::string("\\\\") : std::string(1, c);
      other += "]";
      bool multibyte_children = false;
      for (const std::string& e : escaped) multibyte_children = multibyte_children || e[0] != '\\';
      if (multibyte_children) {
        // Children that are non-ASCII characters: exclude them too.
        other.pop_back();
        for (const std::string& e : escaped)
          if (e[0] != '\\') other += e;
        other += "]";
      }
      alts.push_back(other + " " + R("char") + "* \"\\\"\"");
      alts.push_back("\"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4}) " + R("char") + "* \"\\\"\"");
      std::string body;
      for (size_t k = 0; k < alts.size(); ++k) body += (k ? " | " : "") + alts[k];
      out_ += name + "_" + std::to_string(i) + " ::= " + body + "\n";
    }
    out_ += name + " ::= \"\\\"\" " + name + "_0\n";
    return name;
  }

  Result<std::string> Object(const Json& s, const std::string& path, int depth) {
    if (s.contains("minProperties") && s["minProperties"] != 0)
      return Unsupported(path, "minProperties above 0 is not supported");
    struct Prop {
      std::string key, value;
      bool required;
    };
    std::vector<Prop> props;
    std::set<std::string> required;
    if (s.contains("required")) {
      if (!s["required"].is_array()) return Unsupported(path, "required must be an array");
      for (const Json& r : s["required"]) {
        if (!r.is_string()) return Unsupported(path, "required must list strings");
        required.insert(r.get<std::string>());
      }
      if (required.size() > 1000) return Unsupported(path, "more than 1000 required properties");
    }
    std::vector<std::string> names;
    std::unordered_set<std::string> named;  // names, for lookups (required may list 1000)
    if (s.contains("properties")) {
      if (!s["properties"].is_object()) return Unsupported(path, "properties must be an object");
      if (s["properties"].size() > 1000) return Unsupported(path, "more than 1000 properties");
      for (const auto& [k, v] : s["properties"].items()) {
        TERN_ASSIGN_OR_RETURN(std::string e, Visit(v, path + "/properties/" + k, depth + 1));
        names.push_back(k);
        named.insert(k);
        if (e == "[]") {
          if (required.count(k)) return std::string("[]");
          continue;  // a property that may not appear
        }
        props.push_back({k, e, required.count(k) > 0});
      }
    }
    for (const std::string& r : required)
      if (named.insert(r).second) {
        props.push_back({r, R("value"), true});
        names.push_back(r);
      }
    std::optional<std::string> addl;
    if (s.contains("additionalProperties")) {
      TERN_ASSIGN_OR_RETURN(std::string e, Visit(s["additionalProperties"], path + "/additionalProperties", depth + 1));
      if (e != "[]") addl = e;
    } else if (!o_.strict) {
      addl = R("value");
    }
    std::string addl_pair;
    if (addl) addl_pair = "(" + (names.empty() ? R("string") : OtherKey(names)) + " " + R("colon") + " " + *addl + ")";
    const std::string base = R(fmt::format("obj{}", objects_++));
    auto pair = [&](size_t i) { return EbnfQuote(Json(props[i].key).dump()) + " " + R("colon") + " " + props[i].value; };
    const size_t n = props.size();
    // base_r<i>: the rest after something was written, from property i on.
    for (size_t i = 0; i <= n; ++i) {
      std::string body;
      if (i == n) body = addl ? "(" + R("comma") + " " + addl_pair + ")*" : "\"\"";
      else if (props[i].required) body = R("comma") + " " + pair(i) + " " + base + "_r" + std::to_string(i + 1);
      else body = "(" + R("comma") + " " + pair(i) + ")? " + base + "_r" + std::to_string(i + 1);
      out_ += base + "_r" + std::to_string(i) + " ::= " + body + "\n";
    }
    // The first property written is j; every property before j is optional.
    std::vector<std::string> firsts;
    bool all_optional = true;
    for (size_t j = 0; j < n; ++j) {
      firsts.push_back(pair(j) + " " + base + "_r" + std::to_string(j + 1));
      if (props[j].required) {
        all_optional = false;
        break;
      }
    }
    if (all_optional && addl) firsts.push_back(addl_pair + " " + base + "_r" + std::to_string(n));
    std::string first;
    for (size_t k = 0; k < firsts.size(); ++k) first += (k ? " | " : "") + firsts[k];
    std::string out = "\"{\" " + R("ws") + " ";
    if (first.empty()) return out + "\"}\"";
    return out + (all_optional ? "(" + first + ")?" : "(" + first + ")") + " " + R("ws") + " \"}\"";
  }

 private:
  const Json& root_;
  JsonSchemaOptions o_;
  std::string p_;
  static constexpr int kMaxActive = 256;           // subschemas being compiled at once (the C++ stack)
  static constexpr int64_t kMaxWork = 200000;      // Visit and MergeAllOf calls in all
  static constexpr size_t kMaxGrammarText = size_t(16) << 20;  // the EBNF text so far
  int active_ = 0;
  int64_t work_ = 0;
  size_t bytes_ = 0;  // text the subschemas returned, in all
  std::string out_;
  std::map<std::string, std::string> refs_;
  int objects_ = 0, other_keys_ = 0, patterns_ = 0;
};

}  // namespace

Result<std::string> JsonSchemaToEbnf(const nlohmann::ordered_json& schema, const JsonSchemaOptions& options,
                                     std::string_view prefix) {
  // A keyword of the wrong JSON type ("nullable": "yes", a non-string $ref)
  // throws from nlohmann's accessors: the schema's fault, a 400, not a 500.
  try {
    return Compiler(schema, options, prefix).Run();
  } catch (const nlohmann::ordered_json::exception& e) {
    return Status::Errorf("unsupported JSON schema: a keyword has a value of the wrong type ({})", e.what());
  }
}

}  // namespace tern::grammar
