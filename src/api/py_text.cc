#include "api/py_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace tern::api {

std::string PyFloatRepr(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x < 0 ? "-inf" : "inf";
  if (x == 0) return std::signbit(x) ? "-0.0" : "0.0";
  // Shortest round-trip digits in scientific form: "-d.ddde[+-]XX".
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), x, std::chars_format::scientific);
  (void)ec;
  std::string_view sci(buf, end - buf);
  std::string out;
  size_t pos = 0;
  if (sci[0] == '-') {
    out.push_back('-');
    pos = 1;
  }
  const size_t e = sci.find('e');
  std::string digits;
  for (size_t i = pos; i < e; ++i)
    if (sci[i] != '.') digits.push_back(sci[i]);
  const int exp10 = std::atoi(std::string(sci.substr(e + 1)).c_str());
  // Python (float_repr_style 'short'): value = 0.DIGITS * 10^decpt.
  const int decpt = exp10 + 1;
  const int n = static_cast<int>(digits.size());
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      out += "0.";
      out.append(static_cast<size_t>(-decpt), '0');
      out += digits;
    } else if (decpt >= n) {
      out += digits;
      out.append(static_cast<size_t>(decpt - n), '0');
      out += ".0";
    } else {
      out += digits.substr(0, decpt);
      out.push_back('.');
      out += digits.substr(decpt);
    }
    return out;
  }
  out.push_back(digits[0]);
  if (n > 1) {
    out.push_back('.');
    out += digits.substr(1);
  }
  char exp_buf[16];
  std::snprintf(exp_buf, sizeof(exp_buf), "e%c%02d", exp10 < 0 ? '-' : '+', std::abs(exp10));
  out += exp_buf;
  return out;
}

void AppendPyJsonString(std::string* out, std::string_view s) {
  out->push_back('"');
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': *out += "\\\""; break;
      case '\\': *out += "\\\\"; break;
      case '\n': *out += "\\n"; break;
      case '\r': *out += "\\r"; break;
      case '\t': *out += "\\t"; break;
      case '\b': *out += "\\b"; break;
      case '\f': *out += "\\f"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          *out += buf;
        } else {
          out->push_back(ch);
        }
    }
  }
  out->push_back('"');
}

void AppendPyJsonDumps(std::string* out, const nlohmann::ordered_json& v) {
  using Type = nlohmann::ordered_json::value_t;
  switch (v.type()) {
    case Type::null: *out += "null"; return;
    case Type::boolean: *out += v.get<bool>() ? "true" : "false"; return;
    case Type::number_integer: *out += std::to_string(v.get<int64_t>()); return;
    case Type::number_unsigned: *out += std::to_string(v.get<uint64_t>()); return;
    case Type::number_float: {
      const double d = v.get<double>();
      if (std::isnan(d)) *out += "NaN";
      else if (std::isinf(d)) *out += d < 0 ? "-Infinity" : "Infinity";
      else *out += PyFloatRepr(d);
      return;
    }
    case Type::string: AppendPyJsonString(out, v.get_ref<const std::string&>()); return;
    case Type::array: {
      out->push_back('[');
      bool first = true;
      for (const auto& e : v) {
        if (!first) *out += ", ";
        first = false;
        AppendPyJsonDumps(out, e);
      }
      out->push_back(']');
      return;
    }
    case Type::object: {
      out->push_back('{');
      bool first = true;
      for (const auto& [k, e] : v.items()) {
        if (!first) *out += ", ";
        first = false;
        AppendPyJsonString(out, k);
        *out += ": ";
        AppendPyJsonDumps(out, e);
      }
      out->push_back('}');
      return;
    }
    default: *out += "null"; return;  // binary/discarded: never produced by parsing
  }
}

std::string PyJsonDumps(const nlohmann::ordered_json& value) {
  std::string out;
  AppendPyJsonDumps(&out, value);
  return out;
}

std::string PyStrRepr(std::string_view s) {
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, quote);
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (ch == quote || ch == '\\') {
      out.push_back('\\');
      out.push_back(ch);
    } else if (ch == '\n') {
      out += "\\n";
    } else if (ch == '\r') {
      out += "\\r";
    } else if (ch == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    } else {
      out.push_back(ch);
    }
  }
  out.push_back(quote);
  return out;
}

std::string PyRepr(const nlohmann::ordered_json& v) {
  using Type = nlohmann::ordered_json::value_t;
  switch (v.type()) {
    case Type::null: return "None";
    case Type::boolean: return v.get<bool>() ? "True" : "False";
    case Type::number_integer: return std::to_string(v.get<int64_t>());
    case Type::number_unsigned: return std::to_string(v.get<uint64_t>());
    case Type::number_float: return PyFloatRepr(v.get<double>());
    case Type::string: return PyStrRepr(v.get_ref<const std::string&>());
    case Type::array: {
      std::string out = "[";
      bool first = true;
      for (const auto& e : v) {
        if (!first) out += ", ";
        first = false;
        out += PyRepr(e);
      }
      return out + "]";
    }
    case Type::object: {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, e] : v.items()) {
        if (!first) out += ", ";
        first = false;
        out += PyStrRepr(k) + ": " + PyRepr(e);
      }
      return out + "}";
    }
    default: return "None";
  }
}

}  // namespace tern::api
