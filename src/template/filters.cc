// Builtin filters on scalars and strings, and the filter registry. Sequence
// filters (map, select, sort, ...) are in filters_seq.cc.
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>

#include "template/builtins.h"
#include "template/evaluator.h"
#include "template/filters_seq.h"
#include "template/utf8.h"

namespace tern::jinja {

namespace {

Value Str(Evaluator& ev, std::string s) { return ev.MakeString(std::move(s)); }

Value Default(Evaluator&, const Value& v, CallArgs& args) {
  ArgBinder a("default", args, {"default_value", "boolean"});
  const bool use_default = v.is_undefined() || (a[1].Truthy() && !v.Truthy());
  if (!use_default) return v;
  return a.has(0) ? a[0] : Value::String("");
}

Value Length(Evaluator&, const Value& v, CallArgs& args) {
  ArgBinder("length", args, {});
  switch (v.kind()) {
    case Kind::kUndefined:
      return Value::Int(0);
    case Kind::kString:
      return Value::Int(static_cast<int64_t>(utf8::Length(v.str())));
    case Kind::kList:
      return Value::Int(static_cast<int64_t>(v.list().items.size()));
    case Kind::kDict:
      if (!v.is_namespace()) return Value::Int(static_cast<int64_t>(v.dict().entries.size()));
      break;
    default:
      break;
  }
  ThrowRender(fmt::format("object of type '{}' has no len()", TypeName(v)));
}

Value String(Evaluator& ev, const Value& v, CallArgs& args) {
  ArgBinder("string", args, {});
  return v.is_string() ? v : Str(ev, PyStr(v));
}

Value Lower(Evaluator& ev, const Value& v, CallArgs& args) {
  ArgBinder("lower", args, {});
  return Str(ev, utf8::Lower(PyStr(v)));
}
Value Upper(Evaluator& ev, const Value& v, CallArgs& args) {
  ArgBinder("upper", args, {});
  return Str(ev, utf8::Upper(PyStr(v)));
}
Value Capitalize(Evaluator& ev, const Value& v, CallArgs& args) {
  ArgBinder("capitalize", args, {});
  return Str(ev, utf8::Capitalize(PyStr(v)));
}

// Jinja2's title: words start after '-', whitespace or an opening bracket;
// each word is its first character upper-cased plus the rest lower-cased.
Value Title(Evaluator& ev, const Value& v, CallArgs& args) {
  ArgBinder("title", args, {});
  const std::string s = PyStr(v);
  std::string out;
  bool word_start = true;
  for (size_t i = 0; i < s.size();) {
    size_t len;
    const char32_t c = utf8::Decode(s, i, &len);
    const std::string one = s.substr(i, len);
    const bool sep = utf8::IsSpace(c) || c == '-' || c == '(' || c == '{' || c == '[' || c == '<';
    if (sep) {
      out += one;
      word_start = true;
    } else {
      out += word_start ? utf8::Upper(one) : utf8::Lower(one);
      word_start = false;
    }
    i += len;
  }
  return Str(ev, std::move(out));
}

Value Trim(Evaluator& ev, const Value& v, CallArgs& args) {
  ArgBinder a("trim", args, {"chars"});
  const std::string s = PyStr(v);
  if (a.has(0) && !a[0].is_none()) {
    const std::string_view chars = RequireString(a[0], "trim chars");
    return Str(ev, std::string(utf8::Strip(s, &chars, true, true)));
  }
  return Str(ev, std::string(utf8::Strip(s, nullptr, true, true)));
}

Value Replace(Evaluator& ev, const Value& v, CallArgs& args) {
  ArgBinder a("replace", args, {"old", "new", "count"}, 2);
  CallArgs m;
  m.pos = {Value::String(PyStr(a[0])), Value::String(PyStr(a[1]))};
  if (a.has(2) && !a[2].is_none()) m.pos.push_back(a[2]);
  Value out;
  CallStrMethod(ev, Value::String(PyStr(v)), "replace", m, &out);
  return out;
}

// Python int(str, base) parsing: optional whitespace and sign, digits with
// single underscores between them.
bool ParsePyInt(const std::string& text, int base, int64_t* out) {
  std::string_view s = utf8::Strip(text, nullptr, true, true);
  bool neg = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    neg = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s.size() > 2 && s[0] == '0' && base == 16 && (s[1] == 'x' || s[1] == 'X')) s.remove_prefix(2);
  if (s.empty()) return false;
  __int128 v = 0;
  bool prev_digit = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '_') {
      if (!prev_digit || i + 1 == s.size()) return false;
      prev_digit = false;
      continue;
    }
    int d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') d = (c | 0x20) - 'a' + 10;
    else return false;
    if (d >= base) return false;
    v = v * base + d;
    if (v > static_cast<__int128>(INT64_MAX) + 1) ThrowRender("integer too large");
    prev_digit = true;
  }
  if (neg) v = -v;
  if (v > INT64_MAX) ThrowRender("integer too large");
  *out = static_cast<int64_t>(v);
  return true;
}

bool ParsePyFloat(const std::string& text, double* out) {
  std::string s(utf8::Strip(text, nullptr, true, true));
  std::string clean;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '_') {
      if (i == 0 || i + 1 == s.size() || !std::isdigit(static_cast<unsigned char>(s[i - 1])) ||
          !std::isdigit(static_cast<unsigned char>(s[i + 1]))) {
        return false;
      }
      continue;
    }
    clean += s[i];
  }
  if (clean.empty()) return false;
  std::string lower = utf8::Lower(clean);
  std::string_view body = lower;
  if (!body.empty() && (body[0] == '+' || body[0] == '-')) body.remove_prefix(1);
  if (body == "inf" || body == "infinity" || body == "nan") {
    const double v = body == "nan" ? NAN : INFINITY;
    *out = lower[0] == '-' ? -v : v;
    return true;
  }
  for (char c : body) {
    if (!(std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == 'e' || c == '+' || c == '-')) return false;
  }
  char* end = nullptr;
  errno = 0;
  *out = std::strtod(clean.c_str(), &end);
  return end == clean.c_str() + clean.size();
}

Value Int(Evaluator&, const Value& v, CallArgs& args) {
  ArgBinder a("int", args, {"default", "base"});
  const Value dflt = a.has(0) ? a[0] : Value::Int(0);
  const int base = a.has(1) ? static_cast<int>(ToInt(a[1], "base")) : 10;
  CheckDefined(v);
  if (v.is_int() || v.is_bool()) return Value::Int(v.as_int());
  if (v.is_float()) {
    const double d = v.as_double();
    if (!std::isfinite(d) || std::fabs(d) >= 9.2e18) return dflt;
    return Value::Int(static_cast<int64_t>(d));
  }
  if (v.is_string()) {
    int64_t i;
    if (base >= 2 && base <= 36 && ParsePyInt(v.str(), base, &i)) return Value::Int(i);
    double d;
    if (ParsePyFloat(v.str(), &d) && std::isfinite(d) && std::fabs(d) < 9.2e18) {
      return Value::Int(static_cast<int64_t>(d));
    }
  }
  return dflt;
}

Value Float(Evaluator&, const Value& v, CallArgs& args) {
  ArgBinder a("float", args, {"default"});
  const Value dflt = a.has(0) ? a[0] : Value::Float(0.0);
  CheckDefined(v);
  if (v.is_number()) return Value::Float(v.as_double());
  double d;
  if (v.is_string() && ParsePyFloat(v.str(), &d)) return Value::Float(d);
  return dflt;
}

Value Abs(Evaluator&, const Value& v, CallArgs& args) {
  ArgBinder("abs", args, {});
  CheckDefined(v);
  if (v.is_int() || v.is_bool()) {
    if (v.as_int() == INT64_MIN) ThrowRender("integer overflow");
    return Value::Int(std::llabs(v.as_int()));
  }
  if (v.is_float()) return Value::Float(std::fabs(v.as_double()));
  ThrowRender(fmt::format("bad operand type for abs(): '{}'", TypeName(v)));
}

// Python round(x, n) for floats: correctly rounded decimal, ties to even on
// the exact binary value (printf does the same).
double PyRoundFloat(double x, int64_t n) {
  if (!std::isfinite(x)) return x;
  if (n > 300) return x;
  if (n < -300) return 0.0 * x;
  if (n >= 0) {
    char buf[512];
    std::snprintf(buf, sizeof(buf), "%.*f", static_cast<int>(n), x);
    return std::strtod(buf, nullptr);
  }
  const double p = std::pow(10.0, static_cast<double>(-n));
  return std::nearbyint(x / p) * p;
}

Value Round(Evaluator&, const Value& v, CallArgs& args) {
  ArgBinder a("round", args, {"precision", "method"});
  const int64_t precision = a.has(0) ? ToInt(a[0], "precision") : 0;
  const std::string method = a.has(1) ? RequireString(a[1], "method") : "common";
  CheckDefined(v);
  if (!v.is_number()) ThrowRender(fmt::format("type {} doesn't define __round__ method", TypeName(v)));
  if (method == "common") {
    if (v.is_float()) return Value::Float(PyRoundFloat(v.as_double(), precision));
    if (precision >= 0) return Value::Int(v.as_int());
    return Value::Int(static_cast<int64_t>(PyRoundFloat(static_cast<double>(v.as_int()), precision)));
  }
  if (method != "ceil" && method != "floor") ThrowRender("method must be common, ceil or floor");
  const double p = std::pow(10.0, static_cast<double>(precision));
  const double x = v.as_double() * p;
  return Value::Float((method == "ceil" ? std::ceil(x) : std::floor(x)) / p);
}

Value Safe(Evaluator&, const Value& v, CallArgs& args) {
  ArgBinder("safe", args, {});
  return v.is_string() ? v : Value::String(PyStr(v));
}

Value Escape(Evaluator& ev, const Value& v, CallArgs& args) {
  ArgBinder("escape", args, {});
  const std::string s = PyStr(v);
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return Str(ev, std::move(out));
}

Value Indent(Evaluator& ev, const Value& v, CallArgs& args) {
  ArgBinder a("indent", args, {"width", "first", "blank"});
  std::string ind = a.has(0) && a[0].is_string() ? a[0].str()
                                                 : std::string(static_cast<size_t>(std::max<int64_t>(0, a.has(0) ? ToInt(a[0], "width") : 4)), ' ');
  ev.CheckSize(ind.size());
  // Jinja2 appends "\n" to the value itself: anything but a string fails.
  if (!v.is_string()) {
    CheckDefined(v);
    ThrowRender(fmt::format("unsupported operand type(s) for +=: '{}' and 'str'", TypeName(v)));
  }
  const std::string s = v.str() + "\n";
  CallArgs none;
  Value lines_v;
  CallStrMethod(ev, Value::String(s), "splitlines", none, &lines_v);
  const auto& lines = lines_v.list().items;
  std::string out;
  if (a[2].Truthy()) {
    for (size_t i = 0; i < lines.size(); ++i) {
      if (i) out += "\n" + ind;
      out += lines[i].str();
      ev.CheckSize(out.size());
    }
  } else {
    out = lines.empty() ? "" : lines[0].str();
    for (size_t i = 1; i < lines.size(); ++i) {
      out += "\n";
      if (!lines[i].str().empty()) out += ind;
      out += lines[i].str();
      ev.CheckSize(out.size());
    }
  }
  if (a[1].Truthy()) out = ind + out;
  return Str(ev, std::move(out));
}

Value Center(Evaluator& ev, const Value& v, CallArgs& args) {
  ArgBinder a("center", args, {"width"});
  CallArgs m;
  m.pos.push_back(a.has(0) ? a[0] : Value::Int(80));
  Value out;
  CallStrMethod(ev, Value::String(PyStr(v)), "center", m, &out);
  return out;
}

Value Format(Evaluator& ev, const Value& v, CallArgs& args) {
  if (!args.pos.empty() && !args.kw.empty()) ThrowRender("can't handle positional and keyword arguments at the same time");
  Value fargs;
  if (!args.kw.empty()) {
    auto d = Value::NewDict();
    for (auto& [k, val] : args.kw) d.dict().Set(k, val);
    fargs = d;
  } else {
    fargs = Value::List(args.pos, true);
  }
  return Str(ev, PyPercentFormat(ev, PyStr(v), fargs));
}

Value ToJson(Evaluator& ev, const Value& v, CallArgs& args) {
  // transformers: json.dumps(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)
  ArgBinder a("tojson", args, {"ensure_ascii", "indent", "separators", "sort_keys"});
  JsonDumpOptions o;
  o.ensure_ascii = a[0].Truthy();
  o.sort_keys = a[3].Truthy();
  if (a.has(1) && !a[1].is_none()) {
    o.has_indent = true;
    if (a[1].is_string()) {
      o.indent = a[1].str();
    } else {
      const int64_t n = ToInt(a[1], "indent");
      o.indent.assign(static_cast<size_t>(std::clamp<int64_t>(n, 0, 1024)), ' ');
    }
    o.item_sep = ",";
  }
  if (a.has(2) && !a[2].is_none()) {
    if (!a[2].is_list() || a[2].list().items.size() != 2) ThrowRender("separators must be a pair of strings");
    o.item_sep = RequireString(a[2].list().items[0], "item separator");
    o.key_sep = RequireString(a[2].list().items[1], "key separator");
  }
  std::string out;
  AppendJson(ev, out, v, o);
  return Str(ev, std::move(out));
}

Value Truncate(Evaluator& ev, const Value& v, CallArgs& args) {
  ArgBinder a("truncate", args, {"length", "killwords", "end", "leeway"});
  const std::string s = PyStr(v);
  const int64_t length = a.has(0) ? ToInt(a[0], "length") : 255;
  const bool killwords = a[1].Truthy();
  const std::string end = a.has(2) ? PyStr(a[2]) : "...";
  const int64_t leeway = a.has(3) ? ToInt(a[3], "leeway") : 5;
  const int64_t end_len = static_cast<int64_t>(utf8::Length(end));
  if (length < end_len) ThrowRender("expected length >= " + std::to_string(end_len));
  const auto offs = utf8::Offsets(s);
  const int64_t n = static_cast<int64_t>(offs.size()) - 1;
  if (n <= length + leeway) return Str(ev, s);
  const std::string head = s.substr(0, offs[static_cast<size_t>(length - end_len)]);
  if (killwords) return Str(ev, head + end);
  const size_t sp = head.rfind(' ');
  return Str(ev, (sp == std::string::npos ? head : head.substr(0, sp)) + end);
}

Value WordCount(Evaluator&, const Value& v, CallArgs& args) {
  ArgBinder("wordcount", args, {});
  const std::string s = PyStr(v);
  int64_t n = 0;
  bool in_word = false;
  for (size_t i = 0; i < s.size();) {
    size_t len;
    const char32_t c = utf8::Decode(s, i, &len);
    const bool w = utf8::IsAlnum(c) || c == '_';
    if (w && !in_word) ++n;
    in_word = w;
    i += len;
  }
  return Value::Int(n);
}

Value Pprint(Evaluator& ev, const Value& v, CallArgs& args) {
  ArgBinder("pprint", args, {});
  return Str(ev, PyRepr(v));
}

Value Attr(Evaluator& ev, const Value& v, CallArgs& args) {
  // Python getattr only: a dict's keys are not attributes.
  ArgBinder a("attr", args, {"name"}, 1);
  const std::string& n = RequireString(a[0], "attr name");
  if (v.is_object()) return v.obj().GetAttr(n);
  if (v.is_namespace()) {
    const Value* x = v.dict().Find(n);
    return x ? *x : Value();
  }
  if (IsMethodName(v, n)) return MakeBoundMethod(v, n);
  CheckDefined(v);
  return Value();
}

struct FilterEntry {
  std::string_view name;
  FilterFn fn;
};

constexpr FilterEntry kFilters[] = {
    {"default", Default},     {"d", Default},           {"length", Length},       {"count", Length},
    {"string", String},       {"lower", Lower},         {"upper", Upper},         {"capitalize", Capitalize},
    {"title", Title},         {"trim", Trim},           {"replace", Replace},     {"int", Int},
    {"float", Float},         {"abs", Abs},             {"round", Round},         {"safe", Safe},
    {"escape", Escape},       {"e", Escape},            {"forceescape", Escape},  {"indent", Indent},
    {"center", Center},       {"format", Format},       {"tojson", ToJson},       {"truncate", Truncate},
    {"wordcount", WordCount}, {"pprint", Pprint},       {"attr", Attr},
    {"first", FilterFirst},   {"last", FilterLast},     {"list", FilterList},     {"join", FilterJoin},
    {"map", FilterMap},       {"select", FilterSelect}, {"reject", FilterReject}, {"selectattr", FilterSelectAttr},
    {"rejectattr", FilterRejectAttr}, {"items", FilterItems}, {"dictsort", FilterDictSort},
    {"unique", FilterUnique}, {"reverse", FilterReverse}, {"sort", FilterSort},   {"sum", FilterSum},
    {"min", FilterMin},       {"max", FilterMax},       {"batch", FilterBatch},   {"slice", FilterSlice},
};

}  // namespace

FilterFn FindFilter(std::string_view name) {
  for (const auto& f : kFilters) {
    if (f.name == name) return f.fn;
  }
  return nullptr;
}

}  // namespace tern::jinja
