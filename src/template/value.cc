#include "template/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "template/error.h"
#include "template/utf8.h"

namespace tern::jinja {

Value Value::String(std::string s) {
  Value v(Kind::kString);
  v.ptr_ = std::make_shared<std::string>(std::move(s));
  return v;
}

uint32_t DepthOf(const Value& v) {
  if (v.is_list()) return v.list().depth;
  if (v.is_dict()) return v.dict().depth;
  return 0;
}

void CheckDepth(uint32_t depth) {
  if (depth > kMaxValueDepth) ThrowLimit("value nested deeper than 512 lists or dicts");
}

Value Value::List(std::vector<Value> items, bool is_tuple) {
  uint32_t depth = 1;
  for (const auto& it : items) {
    if (it.kind_ == Kind::kList || it.kind_ == Kind::kDict) depth = std::max(depth, DepthOf(it) + 1);
  }
  CheckDepth(depth);
  Value v(Kind::kList);
  auto l = std::make_shared<ListObj>();
  l->depth = depth;
  l->items = std::move(items);
  l->is_tuple = is_tuple;
  v.ptr_ = std::move(l);
  return v;
}

Value Value::Dict(std::shared_ptr<DictObj> d) {
  Value v(Kind::kDict);
  v.ptr_ = std::move(d);
  return v;
}

Value Value::NewDict() { return Dict(std::make_shared<DictObj>()); }

Value Value::Obj(std::shared_ptr<Object> o) {
  Value v(Kind::kObject);
  // Stored through Object* so that obj() may cast the void pointer back.
  v.ptr_ = std::shared_ptr<void>(o, static_cast<void*>(o.get()));
  return v;
}

bool Value::is_tuple() const { return kind_ == Kind::kList && list().is_tuple; }
bool Value::is_namespace() const { return kind_ == Kind::kDict && dict().is_namespace; }

bool Value::Truthy() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone:
      return false;
    case Kind::kBool:
      return b_;
    case Kind::kInt:
      return i_ != 0;
    case Kind::kFloat:
      return f_ != 0.0;
    case Kind::kString:
      return !str().empty();
    case Kind::kList:
      return !list().items.empty();
    case Kind::kDict:
      return !dict().entries.empty();
    case Kind::kObject:
      return true;
  }
  return false;
}

Value Object::Call(Evaluator&, CallArgs&) const { return Value(); }
std::string Object::Str() const { return "<" + std::string(TypeName()) + " object>"; }

bool Equals(const Value& a, const Value& b, uint32_t depth) {
  if (depth > kMaxValueDepth) return a.identity() == b.identity();
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
    return a.as_int() == b.as_int();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Kind::kUndefined:
    case Kind::kNone:
      return true;
    case Kind::kString:
      return a.str() == b.str();
    case Kind::kList: {
      const auto& x = a.list();
      const auto& y = b.list();
      if (x.is_tuple != y.is_tuple || x.items.size() != y.items.size()) return false;
      for (size_t i = 0; i < x.items.size(); ++i) {
        if (!Equals(x.items[i], y.items[i], depth + 1)) return false;
      }
      return true;
    }
    case Kind::kDict: {
      const auto& x = a.dict();
      const auto& y = b.dict();
      if (x.is_namespace || y.is_namespace) return a.identity() == b.identity();
      if (x.entries.size() != y.entries.size()) return false;
      for (const auto& [k, v] : x.entries) {
        const Value* o = y.Find(k);
        if (o == nullptr || !Equals(v, *o, depth + 1)) return false;
      }
      return true;
    }
    case Kind::kObject:
      return a.identity() == b.identity();
    default:
      return false;
  }
}

bool LessThan(const Value& a, const Value& b, bool* ok, uint32_t depth) {
  *ok = depth <= kMaxValueDepth;
  if (!*ok) return false;
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() < b.as_double();
    return a.as_int() < b.as_int();
  }
  if (a.is_string() && b.is_string()) return a.str() < b.str();  // UTF-8 keeps code point order
  if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
    const auto& x = a.list().items;
    const auto& y = b.list().items;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (Equals(x[i], y[i], depth + 1)) continue;
      return LessThan(x[i], y[i], ok, depth + 1);
    }
    return x.size() < y.size();
  }
  *ok = false;
  return false;
}

std::string FloatRepr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  std::string_view sci(buf, res.ptr - buf);
  // sci = [-]d[.ddd]e[+-]XX
  std::string out;
  size_t pos = 0;
  if (sci[0] == '-') {
    out += '-';
    pos = 1;
  }
  const size_t epos = sci.find('e');
  std::string digits;
  for (size_t i = pos; i < epos; ++i) {
    if (sci[i] != '.') digits += sci[i];
  }
  int exp = 0;
  std::from_chars(sci.data() + epos + 1 + (sci[epos + 1] == '+' ? 1 : 0), sci.data() + sci.size(), exp);
  if (exp < -4 || exp >= 16) {
    out += digits[0];
    if (digits.size() > 1) {
      out += '.';
      out.append(digits, 1);
    }
    out += 'e';
    out += exp < 0 ? '-' : '+';
    const int ae = exp < 0 ? -exp : exp;
    if (ae < 10) out += '0';
    out += std::to_string(ae);
    return out;
  }
  if (exp < 0) {
    out += "0.";
    out.append(static_cast<size_t>(-exp - 1), '0');
    out += digits;
    return out;
  }
  const size_t int_len = static_cast<size_t>(exp) + 1;
  if (digits.size() <= int_len) {
    out += digits;
    out.append(int_len - digits.size(), '0');
    out += ".0";
  } else {
    out.append(digits, 0, int_len);
    out += '.';
    out.append(digits, int_len);
  }
  return out;
}

static void AppendStrRepr(std::string& out, const std::string& s) {
  const bool has_single = s.find('\'') != std::string::npos;
  const bool has_double = s.find('"') != std::string::npos;
  const char quote = (has_single && !has_double) ? '"' : '\'';
  out += quote;
  for (size_t i = 0; i < s.size();) {
    size_t len;
    const char32_t c = utf8::Decode(s, i, &len);
    if (c == static_cast<char32_t>(quote) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (utf8::IsPrintable(c) && !(c == 0xFFFD && len == 1)) {
      out.append(s, i, len);
    } else {
      char buf[16];
      if (c == 0xFFFD && len == 1) {
        std::snprintf(buf, sizeof(buf), "\\udc%02x", static_cast<unsigned char>(s[i]));  // surrogateescape
      } else if (c < 0x100) {
        std::snprintf(buf, sizeof(buf), "\\x%02x", static_cast<unsigned>(c));
      } else if (c < 0x10000) {
        std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(c));
      } else {
        std::snprintf(buf, sizeof(buf), "\\U%08x", static_cast<unsigned>(c));
      }
      out += buf;
    }
    i += len;
  }
  out += quote;
}

static void AppendRepr(std::string& out, const Value& v, uint32_t depth);

static void AppendContainer(std::string& out, const Value& v, uint32_t depth) {
  // Only a cycle (a namespace or, with allow_mutation, a list containing
  // itself) gets this deep: Python prints it as [...]
  if (depth > kMaxValueDepth) {
    out += v.is_list() ? "[...]" : "{...}";
    return;
  }
  if (v.is_list()) {
    const auto& l = v.list();
    out += l.is_tuple ? '(' : '[';
    for (size_t i = 0; i < l.items.size(); ++i) {
      if (i) out += ", ";
      AppendRepr(out, l.items[i], depth + 1);
    }
    if (l.is_tuple && l.items.size() == 1) out += ',';
    out += l.is_tuple ? ')' : ']';
    return;
  }
  const auto& d = v.dict();
  if (d.is_namespace) out += "<Namespace ";
  out += '{';
  bool first = true;
  for (const auto& [k, val] : d.entries) {
    if (!first) out += ", ";
    first = false;
    AppendStrRepr(out, k);
    out += ": ";
    AppendRepr(out, val, depth + 1);
  }
  out += '}';
  if (d.is_namespace) out += '>';
}

static void AppendRepr(std::string& out, const Value& v, uint32_t depth) {
  switch (v.kind()) {
    case Kind::kUndefined:
      out += "Undefined";
      return;
    case Kind::kString:
      AppendStrRepr(out, v.str());
      return;
    case Kind::kList:
    case Kind::kDict:
      AppendContainer(out, v, depth);
      return;
    default:
      AppendPyStr(out, v);
  }
}

void AppendPyStr(std::string& out, const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined:
      return;
    case Kind::kNone:
      out += "None";
      return;
    case Kind::kBool:
      out += v.as_bool() ? "True" : "False";
      return;
    case Kind::kInt: {
      char buf[24];
      auto res = std::to_chars(buf, buf + sizeof(buf), v.as_int());
      out.append(buf, res.ptr);
      return;
    }
    case Kind::kFloat:
      out += FloatRepr(v.as_double());
      return;
    case Kind::kString:
      out += v.str();
      return;
    case Kind::kList:
    case Kind::kDict:
      AppendContainer(out, v, 0);
      return;
    case Kind::kObject:
      out += v.obj().Str();
      return;
  }
}

std::string PyStr(const Value& v) {
  if (v.is_string()) return v.str();
  std::string out;
  AppendPyStr(out, v);
  return out;
}

std::string PyRepr(const Value& v) {
  std::string out;
  AppendRepr(out, v, 0);
  return out;
}

std::string_view TypeName(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined:
      return "Undefined";
    case Kind::kNone:
      return "NoneType";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kString:
      return "str";
    case Kind::kList:
      return v.is_tuple() ? "tuple" : "list";
    case Kind::kDict:
      return v.is_namespace() ? "Namespace" : "dict";
    case Kind::kObject:
      return v.obj().TypeName();
  }
  return "object";
}

std::string ObjectTypeRepr(const Value& v) {
  if (v.is_none()) return "'None'";
  return "'" + std::string(TypeName(v)) + " object'";
}

}  // namespace tern::jinja
