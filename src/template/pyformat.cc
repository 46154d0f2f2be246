// Python string formatting used by templates: "%s and %d" % (a, b), the
// |format filter, and "{} {name:>8}".format(...).
#include <cmath>
#include <cstdio>

#include <fmt/format.h>

#include "template/builtins.h"
#include "template/evaluator.h"
#include "template/utf8.h"

namespace tern::jinja {

namespace {

// spec: a printf conversion the callers build from a checked type letter
// (never one taken from the template unchecked: %S or %n would read or
// write through the argument). Width and precision are bounded by the
// callers, so the result is at most about a megabyte.
template <typename T>
std::string Printf(const std::string& spec, T v) {
  char buf[512];
  const int n = std::snprintf(buf, sizeof(buf), spec.c_str(), v);
  if (n < 0) ThrowRender("format width or precision too large");
  if (static_cast<size_t>(n) < sizeof(buf)) return std::string(buf, static_cast<size_t>(n));
  std::string out(static_cast<size_t>(n) + 1, '\0');
  std::snprintf(out.data(), out.size(), spec.c_str(), v);
  out.resize(static_cast<size_t>(n));
  return out;
}

double NumberArg(const Value& v, char type) {
  CheckDefined(v);
  if (!v.is_number()) ThrowRender(fmt::format("%{} format: a real number is required, not {}", type, TypeName(v)));
  return v.as_double();
}

long long IntArg(const Value& v, char type) {
  CheckDefined(v);
  if (v.is_int() || v.is_bool()) return v.as_int();
  if (v.is_float() && (type == 'd' || type == 'i' || type == 'u')) {
    const double d = v.as_double();
    if (!std::isfinite(d) || std::fabs(d) > 9.2e18) ThrowRender("cannot convert float to integer");
    return static_cast<long long>(d);
  }
  ThrowRender(fmt::format("%{} format: an integer is required, not {}", type, TypeName(v)));
}

// Pads a string to a width counted in code points.
std::string PadTo(const std::string& s, int64_t width, char align, const std::string& fill) {
  const int64_t len = static_cast<int64_t>(utf8::Length(s));
  if (width <= len) return s;
  const int64_t total = width - len;
  const int64_t left = align == '<' ? 0 : align == '>' ? total : total / 2;
  std::string out;
  for (int64_t i = 0; i < left; ++i) out += fill;
  out += s;
  for (int64_t i = 0; i < total - left; ++i) out += fill;
  return out;
}

std::string TruncateCp(const std::string& s, int64_t n) {
  if (n < 0) return s;
  const auto offs = utf8::Offsets(s);
  if (static_cast<size_t>(n) + 1 >= offs.size()) return s;
  return s.substr(0, offs[static_cast<size_t>(n)]);
}

// format(value, spec) for the common spec forms.
std::string FormatSpec(Evaluator& ev, const Value& v, const std::string& spec) {
  size_t i = 0;
  std::string fill = " ";
  char align = 0;
  auto is_align = [](char c) { return c == '<' || c == '>' || c == '^' || c == '='; };
  if (!spec.empty()) {
    size_t len;
    utf8::Decode(spec, 0, &len);
    if (len < spec.size() && is_align(spec[len])) {
      fill = spec.substr(0, len);
      align = spec[len];
      i = len + 1;
    } else if (is_align(spec[0])) {
      align = spec[0];
      i = 1;
    }
  }
  char sign = '-';
  if (i < spec.size() && (spec[i] == '+' || spec[i] == '-' || spec[i] == ' ')) sign = spec[i++];
  bool alt = false;
  if (i < spec.size() && spec[i] == '#') {
    alt = true;
    ++i;
  }
  if (i < spec.size() && spec[i] == '0') {
    if (align == 0) {
      fill = "0";
      align = '=';
    }
    ++i;
  }
  int64_t width = 0;
  while (i < spec.size() && spec[i] >= '0' && spec[i] <= '9') width = std::min<int64_t>(width * 10 + (spec[i++] - '0'), INT64_C(1) << 40);
  ev.CheckSize(static_cast<size_t>(width));
  bool comma = false;
  if (i < spec.size() && (spec[i] == ',' || spec[i] == '_')) {
    comma = true;
    ++i;
  }
  int64_t precision = -1;
  if (i < spec.size() && spec[i] == '.') {
    ++i;
    precision = 0;
    while (i < spec.size() && spec[i] >= '0' && spec[i] <= '9') precision = std::min<int64_t>(precision * 10 + (spec[i++] - '0'), 1000);
  }
  char type = 0;
  if (i < spec.size()) type = spec[i++];
  if (i != spec.size()) ThrowRender("Invalid format specifier '" + spec + "'");

  std::string body;
  bool numeric = false;
  bool negative = false;
  if (v.is_string() || (type == 0 && !v.is_number()) || type == 's') {
    if (type != 0 && type != 's') ThrowRender(fmt::format("Unknown format code '{}' for object of type '{}'", type, TypeName(v)));
    body = TruncateCp(PyStr(v), precision);
  } else if (v.is_number()) {
    numeric = true;
    const bool as_int = (v.is_int() || v.is_bool()) && (type == 0 || type == 'd' || type == 'x' || type == 'X' || type == 'o' || type == 'b' || type == 'c');
    if (as_int) {
      if (v.is_bool() && type == 0) {
        body = PyStr(v);
        numeric = false;
      } else {
        long long n = v.as_int();
        negative = n < 0;
        unsigned long long u = negative ? 0ULL - static_cast<unsigned long long>(n) : static_cast<unsigned long long>(n);
        if (type == 'x') body = fmt::format("{:x}", u);
        else if (type == 'X') body = fmt::format("{:X}", u);
        else if (type == 'o') body = fmt::format("{:o}", u);
        else if (type == 'b') body = fmt::format("{:b}", u);
        else if (type == 'c') { utf8::Append(body, static_cast<char32_t>(u)); numeric = false; }
        else body = std::to_string(u);
        if (alt && (type == 'x' || type == 'X' || type == 'o' || type == 'b')) body = std::string("0") + type + body;
        if (comma && (type == 0 || type == 'd')) {
          std::string grouped;
          for (size_t k = 0; k < body.size(); ++k) {
            if (k && (body.size() - k) % 3 == 0) grouped += ',';
            grouped += body[k];
          }
          body = grouped;
        }
      }
    } else {
      if (type == 'd' || type == 'x' || type == 'X' || type == 'o' || type == 'b' || type == 'c') {
        ThrowRender(fmt::format("Unknown format code '{}' for object of type 'float'", type));
      }
      double d = v.as_double();
      negative = std::signbit(d) && !std::isnan(d);
      d = std::fabs(d);
      if (type == 0 && precision < 0) {
        body = FloatRepr(d);
      } else {
        char t = type == 0 ? 'g' : type;
        if (t != 'e' && t != 'E' && t != 'f' && t != 'F' && t != 'g' && t != 'G' && t != 'n' && t != '%') {
          ThrowRender(fmt::format("Unknown format code '{}' for object of type '{}'", type, TypeName(v)));
        }
        if (t == '%') {
          d *= 100;
          t = 'f';
        }
        if (t == 'n') t = 'g';
        const int64_t p = precision < 0 ? 6 : precision;
        body = Printf(std::string("%") + (alt ? "#" : "") + "." + std::to_string(p) + t, d);
        if (type == 0 && body.find_first_of(".eE") == std::string::npos && std::isfinite(d)) body += ".0";
        if (type == '%') body += '%';
      }
    }
  } else {
    body = PyStr(v);
  }
  if (numeric) {
    std::string sign_str = negative ? "-" : sign == '+' ? "+" : sign == ' ' ? " " : "";
    if (align == '=') {
      const int64_t w = width - static_cast<int64_t>(sign_str.size());
      return sign_str + PadTo(body, w, '>', fill);
    }
    body = sign_str + body;
    return PadTo(body, width, align == 0 ? '>' : align, fill);
  }
  return PadTo(body, width, align == 0 ? '<' : align, fill);
}

}  // namespace

std::string PyPercentFormat(Evaluator& ev, const std::string& f, const Value& args) {
  std::vector<Value> pos;
  const Value* mapping = nullptr;
  if (args.is_tuple()) {
    pos = args.list().items;
  } else if (args.is_dict()) {
    mapping = &args;
    pos.push_back(args);
  } else {
    pos.push_back(args);
  }
  size_t next = 0;
  bool used_mapping = false;
  auto take = [&]() -> const Value& {
    if (next >= pos.size()) ThrowRender("not enough arguments for format string");
    return pos[next++];
  };
  std::string out;
  for (size_t i = 0; i < f.size();) {
    if (f[i] != '%') {
      out += f[i++];
      continue;
    }
    ++i;
    if (i >= f.size()) ThrowRender("incomplete format");
    const Value* arg = nullptr;
    if (f[i] == '(') {
      const size_t close = f.find(')', i);
      if (close == std::string::npos) ThrowRender("incomplete format key");
      if (mapping == nullptr) ThrowRender("format requires a mapping");
      const Value* v = mapping->dict().Find(f.substr(i + 1, close - i - 1));
      if (v == nullptr) ThrowRender("KeyError: '" + f.substr(i + 1, close - i - 1) + "'");
      arg = v;
      used_mapping = true;
      i = close + 1;
    }
    std::string flags;
    while (i < f.size() && (f[i] == '-' || f[i] == '+' || f[i] == ' ' || f[i] == '#' || f[i] == '0')) flags += f[i++];
    std::string width;
    if (i < f.size() && f[i] == '*') {
      width = std::to_string(ToInt(take(), "* width"));
      ++i;
    } else {
      while (i < f.size() && f[i] >= '0' && f[i] <= '9') width += f[i++];
    }
    std::string prec;
    bool has_prec = false;
    if (i < f.size() && f[i] == '.') {
      has_prec = true;
      ++i;
      if (i < f.size() && f[i] == '*') {
        prec = std::to_string(ToInt(take(), "* precision"));
        ++i;
      } else {
        while (i < f.size() && f[i] >= '0' && f[i] <= '9') prec += f[i++];
      }
      if (prec.empty()) prec = "0";
    }
    while (i < f.size() && (f[i] == 'h' || f[i] == 'l' || f[i] == 'L')) ++i;
    if (i >= f.size()) ThrowRender("incomplete format");
    const char type = f[i++];
    if (width.size() > 6 || prec.size() > 4) ThrowRender("format width or precision too large");
    if (type == '%') {
      out += '%';
      continue;
    }
    const Value& v = arg ? *arg : take();
    const std::string spec = "%" + flags + width + (has_prec ? "." + prec : "");
    switch (type) {
      case 's':
      case 'r':
      case 'a': {
        std::string s = type == 's' ? PyStr(v) : PyRepr(v);
        if (has_prec) s = TruncateCp(s, std::stoll(prec));
        const bool left = flags.find('-') != std::string::npos;
        out += PadTo(s, width.empty() ? 0 : std::stoll(width), left ? '<' : '>', " ");
        break;
      }
      case 'd':
      case 'i':
      case 'u':
        out += Printf(spec + "lld", IntArg(v, type));
        break;
      case 'x':
      case 'X':
      case 'o': {
        const long long n = IntArg(v, type);
        // |n| as unsigned: -n overflows for the smallest int64.
        const unsigned long long u = n < 0 ? 0ULL - static_cast<unsigned long long>(n) : static_cast<unsigned long long>(n);
        std::string s = Printf(spec + "ll" + type, u);
        if (n < 0) s = "-" + s;
        out += s;
        break;
      }
      case 'e':
      case 'E':
      case 'f':
      case 'F':
      case 'g':
      case 'G':
        out += Printf(spec + type, NumberArg(v, type));
        break;
      case 'c':
        if (v.is_string() && utf8::Length(v.str()) == 1) {
          out += v.str();
        } else {
          utf8::Append(out, static_cast<char32_t>(IntArg(v, 'c')));
        }
        break;
      default:
        ThrowRender(fmt::format("unsupported format character '{}'", type));
    }
    ev.CheckSize(out.size());
  }
  if (next < pos.size() && !used_mapping && mapping == nullptr) {
    ThrowRender("not all arguments converted during string formatting");
  }
  return out;
}

std::string PyStrFormat(Evaluator& ev, const std::string& f, CallArgs& args) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < f.size();) {
    const char c = f[i];
    if (c == '}') {
      if (i + 1 < f.size() && f[i + 1] == '}') {
        out += '}';
        i += 2;
        continue;
      }
      ThrowRender("Single '}' encountered in format string");
    }
    if (c != '{') {
      out += c;
      ++i;
      continue;
    }
    if (i + 1 < f.size() && f[i + 1] == '{') {
      out += '{';
      i += 2;
      continue;
    }
    const size_t close = f.find('}', i);
    if (close == std::string::npos) ThrowRender("Single '{' encountered in format string");
    std::string field = f.substr(i + 1, close - i - 1);
    i = close + 1;
    std::string spec;
    const size_t colon = field.find(':');
    if (colon != std::string::npos) {
      spec = field.substr(colon + 1);
      field = field.substr(0, colon);
    }
    char conv = 0;
    const size_t bang = field.find('!');
    if (bang != std::string::npos) {
      if (bang + 2 != field.size()) ThrowRender("expected ':' after conversion specifier");
      conv = field[bang + 1];
      field = field.substr(0, bang);
    }
    // field: "" | digits | name, then .attr / [key] parts
    size_t end = field.find_first_of(".[");
    const std::string head = field.substr(0, end);
    Value v;
    if (head.empty()) {
      if (auto_index >= args.pos.size()) ThrowRender(fmt::format("Replacement index {} out of range for positional args tuple", auto_index));
      v = args.pos[auto_index++];
    } else if (std::all_of(head.begin(), head.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) {
      const size_t idx = head.size() < 9 ? std::stoul(head) : SIZE_MAX;
      if (idx >= args.pos.size()) ThrowRender(fmt::format("Replacement index {} out of range for positional args tuple", head));
      v = args.pos[idx];
    } else {
      bool found = false;
      for (auto& [k, val] : args.kw) {
        if (k == head) {
          v = val;
          found = true;
        }
      }
      if (!found) ThrowRender("KeyError: '" + head + "'");
    }
    while (end != std::string::npos && end < field.size()) {
      if (field[end] == '.') {
        const size_t next = field.find_first_of(".[", end + 1);
        v = ev.GetAttr(v, field.substr(end + 1, next == std::string::npos ? std::string::npos : next - end - 1));
        end = next;
      } else {
        const size_t rb = field.find(']', end);
        if (rb == std::string::npos) ThrowRender("Missing ']' in format string");
        const std::string key = field.substr(end + 1, rb - end - 1);
        const bool digits = !key.empty() && key.size() < 18 && std::all_of(key.begin(), key.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
        v = ev.GetItem(v, digits ? Value::Int(std::stoll(key)) : Value::String(key));
        end = rb + 1 < field.size() ? rb + 1 : std::string::npos;
      }
    }
    if (conv == 'r' || conv == 'a') {
      v = Value::String(PyRepr(v));
    } else if (conv == 's') {
      v = Value::String(PyStr(v));
    } else if (conv != 0) {
      ThrowRender(fmt::format("Unknown conversion specifier {}", conv));
    }
    out += FormatSpec(ev, v, spec);
    ev.CheckSize(out.size());
  }
  return out;
}

}  // namespace tern::jinja
