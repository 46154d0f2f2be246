// Python str methods that templates call: message.content.startswith(...),
// .split('</think>'), .strip('\n'), .format(...), ... Indices and lengths
// count code points.
#include <algorithm>
#include <string>
#include <unordered_map>

#include <fmt/format.h>

#include "template/builtins.h"
#include "template/evaluator.h"
#include "template/utf8.h"

namespace tern::jinja {

namespace {

// Code point index of a byte offset.
int64_t CpIndex(const std::string& s, size_t byte) {
  return static_cast<int64_t>(utf8::Length(std::string_view(s).substr(0, byte)));
}

// Byte offset of a (Python, possibly negative) code point index, clamped.
size_t ByteOffset(const std::string& s, const Value& idx, size_t dflt) {
  if (idx.is_undefined() || idx.is_none()) return dflt;
  int64_t i = ToInt(idx, "slice index");
  const auto offs = utf8::Offsets(s);
  const int64_t n = static_cast<int64_t>(offs.size()) - 1;
  if (i < 0) i = std::max<int64_t>(0, i + n);
  if (i > n) i = n;
  return offs[static_cast<size_t>(i)];
}

bool MatchAffix(const std::string& s, const Value& affix, const Value& start, const Value& end, bool prefix,
                std::string_view fn) {
  const size_t b = ByteOffset(s, start, 0);
  const size_t e = std::max(b, ByteOffset(s, end, s.size()));
  const std::string_view view = std::string_view(s).substr(b, e - b);
  auto one = [&](const Value& a) {
    const std::string& x = RequireString(a, std::string(fn) + " first arg");
    if (x.size() > view.size()) return false;
    return prefix ? view.substr(0, x.size()) == x : view.substr(view.size() - x.size()) == x;
  };
  if (affix.is_tuple()) {
    for (const auto& a : affix.list().items) {
      if (one(a)) return true;
    }
    return false;
  }
  return one(affix);
}

std::vector<Value> SplitWhitespace(const std::string& s, int64_t maxsplit, bool from_right) {
  // Python str.split()/rsplit() without a separator.
  std::vector<std::pair<size_t, size_t>> words;  // byte ranges
  size_t i = 0;
  while (i < s.size()) {
    size_t len;
    if (utf8::IsSpace(utf8::Decode(s, i, &len))) {
      i += len;
      continue;
    }
    const size_t start = i;
    while (i < s.size() && !utf8::IsSpace(utf8::Decode(s, i, &len))) i += len;
    words.emplace_back(start, i);
  }
  std::vector<Value> out;
  if (maxsplit < 0 || static_cast<size_t>(maxsplit) + 1 >= words.size()) {
    for (auto [b, e] : words) out.push_back(Value::String(s.substr(b, e - b)));
    return out;
  }
  const size_t m = static_cast<size_t>(maxsplit);
  if (!from_right) {
    for (size_t k = 0; k < m; ++k) out.push_back(Value::String(s.substr(words[k].first, words[k].second - words[k].first)));
    // Python keeps the remainder from its first non-space to the very end.
    out.push_back(Value::String(s.substr(words[m].first)));
    return out;
  }
  out.push_back(Value::String(s.substr(0, words[words.size() - m - 1].second)));
  for (size_t k = words.size() - m; k < words.size(); ++k) {
    out.push_back(Value::String(s.substr(words[k].first, words[k].second - words[k].first)));
  }
  return out;
}

std::vector<Value> SplitSep(const std::string& s, const std::string& sep, int64_t maxsplit, bool from_right) {
  if (sep.empty()) ThrowRender("empty separator");
  std::vector<std::string> parts;
  if (!from_right) {
    size_t start = 0;
    int64_t n = 0;
    while (maxsplit < 0 || n < maxsplit) {
      const size_t p = s.find(sep, start);
      if (p == std::string::npos) break;
      parts.push_back(s.substr(start, p - start));
      start = p + sep.size();
      ++n;
    }
    parts.push_back(s.substr(start));
  } else {
    size_t end = s.size();
    int64_t n = 0;
    while (maxsplit < 0 || n < maxsplit) {
      if (end < sep.size()) break;
      const size_t p = s.rfind(sep, end - sep.size());
      if (p == std::string::npos) break;
      parts.push_back(s.substr(p + sep.size(), end - p - sep.size()));
      end = p;
      ++n;
    }
    parts.push_back(s.substr(0, end));
    std::reverse(parts.begin(), parts.end());
  }
  std::vector<Value> out;
  out.reserve(parts.size());
  for (auto& p : parts) out.push_back(Value::String(std::move(p)));
  return out;
}

bool AllChars(const std::string& s, bool (*pred)(char32_t)) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size();) {
    size_t len;
    if (!pred(utf8::Decode(s, i, &len))) return false;
    i += len;
  }
  return true;
}

std::string Pad(Evaluator& ev, const std::string& s, int64_t width, const Value& fill, int align) {
  const int64_t len = static_cast<int64_t>(utf8::Length(s));
  if (width <= len) return s;
  ev.CheckSize(static_cast<size_t>(width));
  std::string f = fill.is_undefined() ? " " : RequireString(fill, "fill character");
  if (utf8::Length(f) != 1) ThrowRender("The fill character must be exactly one character long");
  const int64_t total = width - len;
  int64_t left = align < 0 ? 0 : align > 0 ? total : total / 2 + (total & width & 1);
  std::string out;
  for (int64_t i = 0; i < left; ++i) out += f;
  out += s;
  for (int64_t i = 0; i < total - left; ++i) out += f;
  return out;
}

// A translate table's keys are code points; tern's dict keys are strings, so
// an int key (a literal {97: 'x'}, or what maketrans returns) is its decimal
// form. Returns false for other keys, which can never match.
bool ParseCodePointKey(std::string_view k, char32_t* out) {
  if (k.empty() || k.size() > 7 || (k.size() > 1 && k[0] == '0')) return false;
  uint32_t v = 0;
  for (char c : k) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint32_t>(c - '0');
  }
  *out = v;
  return true;
}

std::string CodePointKey(char32_t c) { return std::to_string(static_cast<uint32_t>(c)); }

// str.maketrans(x[, y[, z]]) (a static method, called on any string).
Value MakeTrans(CallArgs& args) {
  if (!args.kw.empty()) ThrowRender("maketrans() takes no keyword arguments");
  ArgBinder a("maketrans", args, {"x", "y", "z"}, 1);
  Value table = Value::NewDict();
  DictObj& t = table.dict();
  if (!a.has(1)) {
    if (!a[0].is_dict() || a[0].is_namespace()) {
      ThrowRender("if you give only one argument to maketrans it must be a dict");
    }
    for (const auto& [k, v] : a[0].dict().entries) {
      // A one-character key is that character; a longer one must be the
      // decimal form of an int key (see ParseCodePointKey).
      char32_t cp;
      size_t len = 0;
      if (!k.empty()) cp = utf8::Decode(k, 0, &len);
      if (len == k.size() && !k.empty()) {
        t.Set(CodePointKey(cp), v);
      } else if (ParseCodePointKey(k, &cp)) {
        t.Set(k, v);
      } else {
        ThrowRender("string keys in translate table must be of length 1");
      }
    }
    return table;
  }
  const std::string& x = RequireString(a[0], "maketrans() argument 1");
  const std::string& y = RequireString(a[1], "maketrans() argument 2");
  if (utf8::Length(x) != utf8::Length(y)) ThrowRender("the first two maketrans arguments must have equal length");
  for (size_t i = 0, j = 0; i < x.size();) {
    size_t lx, ly;
    const char32_t cx = utf8::Decode(x, i, &lx), cy = utf8::Decode(y, j, &ly);
    t.Set(CodePointKey(cx), Value::Int(cy));
    i += lx;
    j += ly;
  }
  if (a.has(2)) {
    const std::string& z = RequireString(a[2], "maketrans() argument 3");
    for (size_t i = 0; i < z.size();) {
      size_t len;
      t.Set(CodePointKey(utf8::Decode(z, i, &len)), Value::None());
      i += len;
    }
  }
  return table;
}

// str.translate(table): table[ord(c)] for each character, where a missing
// entry keeps the character, None deletes it, an int is a code point and a
// str replaces it. Tables may be dicts, lists or strings (anything Python
// can index by int).
std::string Translate(Evaluator& ev, const std::string& s, const Value& table) {
  CheckDefined(table);
  std::unordered_map<char32_t, const Value*> map;
  std::vector<size_t> offs;
  if (table.is_dict() && !table.is_namespace()) {
    for (const auto& [k, v] : table.dict().entries) {
      char32_t cp;
      if (ParseCodePointKey(k, &cp)) map.emplace(cp, &v);
    }
    ev.Tick(static_cast<int64_t>(map.size()));
  } else if (table.is_string()) {
    offs = utf8::Offsets(table.str());
  } else if (!table.is_list()) {
    ThrowRender(fmt::format("'{}' object is not subscriptable", TypeName(table)));
  }
  std::string r;
  for (size_t i = 0; i < s.size();) {
    size_t len;
    const char32_t c = utf8::Decode(s, i, &len);
    Value from_str;
    const Value* m = nullptr;
    if (table.is_list()) {
      if (c < table.list().items.size()) m = &table.list().items[c];
    } else if (table.is_string()) {
      if (c + 1 < offs.size()) {
        from_str = Value::String(table.str().substr(offs[c], offs[c + 1] - offs[c]));
        m = &from_str;
      }
    } else if (auto it = map.find(c); it != map.end()) {
      m = it->second;
    }
    if (m == nullptr) {
      r.append(s, i, len);
    } else if (m->is_int() || m->is_bool()) {
      const int64_t v = m->as_int();
      if (v < 0 || v > 0x10FFFF) ThrowRender("character mapping must be in range(0x110000)");
      utf8::Append(r, static_cast<char32_t>(v));
    } else if (m->is_string()) {
      r += m->str();
    } else if (!m->is_none()) {
      CheckDefined(*m);
      ThrowRender("character mapping must return integer, None or str");
    }
    ev.CheckSize(r.size());
    i += len;
  }
  return r;
}

// Python's str.istitle(): upper/titlecase letters only after uncased
// characters, lowercase only after cased ones, and at least one cased.
bool IsTitle(const std::string& s) {
  bool cased = false, prev_cased = false;
  for (size_t i = 0; i < s.size();) {
    size_t len;
    const char32_t c = utf8::Decode(s, i, &len);
    i += len;
    if (utf8::IsUpper(c)) {  // Lu and Lt
      if (prev_cased) return false;
      prev_cased = cased = true;
    } else if (utf8::IsLower(c)) {
      if (!prev_cased) return false;
      prev_cased = cased = true;
    } else {
      prev_cased = false;
    }
  }
  return cased;
}

// str.expandtabs(tabsize=8): columns count code points; \n and \r reset them.
std::string ExpandTabs(Evaluator& ev, const std::string& s, int64_t tab) {
  std::string r;
  int64_t col = 0;
  for (size_t i = 0; i < s.size();) {
    size_t len;
    const char32_t c = utf8::Decode(s, i, &len);
    if (c == '\t') {
      if (tab > 0) {
        const int64_t n = tab - col % tab;
        ev.CheckSize(r.size() + static_cast<size_t>(n));
        r.append(static_cast<size_t>(n), ' ');
        col += n;
      }
    } else {
      r.append(s, i, len);
      col = (c == '\n' || c == '\r') ? 0 : col + 1;
    }
    i += len;
  }
  return r;
}

}  // namespace

bool CallStrMethod(Evaluator& ev, const Value& obj, std::string_view name, CallArgs& args, Value* out) {
  const std::string& s = obj.str();
  auto str = [&](std::string v) { *out = ev.MakeString(std::move(v)); };
  if (name == "upper") { ArgBinder("upper", args, {}); str(utf8::Upper(s)); return true; }
  if (name == "lower" || name == "casefold") { ArgBinder("lower", args, {}); str(utf8::Lower(s)); return true; }
  if (name == "title") { ArgBinder("title", args, {}); str(utf8::Title(s)); return true; }
  if (name == "capitalize") { ArgBinder("capitalize", args, {}); str(utf8::Capitalize(s)); return true; }
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    ArgBinder a(name, args, {"chars"});
    const bool left = name != "rstrip", right = name != "lstrip";
    if (a.has(0) && !a[0].is_none()) {
      const std::string_view chars = RequireString(a[0], std::string(name) + " arg");
      str(std::string(utf8::Strip(s, &chars, left, right)));
    } else {
      str(std::string(utf8::Strip(s, nullptr, left, right)));
    }
    return true;
  }
  if (name == "startswith" || name == "endswith") {
    ArgBinder a(name, args, {"prefix", "start", "end"}, 1);
    *out = Value::Bool(MatchAffix(s, a[0], a[1], a[2], name == "startswith", name));
    return true;
  }
  if (name == "split" || name == "rsplit") {
    ArgBinder a(name, args, {"sep", "maxsplit"});
    const int64_t maxsplit = a.has(1) ? ToInt(a[1], "maxsplit") : -1;
    const bool right = name == "rsplit";
    std::vector<Value> parts = (!a.has(0) || a[0].is_none())
                                   ? SplitWhitespace(s, maxsplit, right)
                                   : SplitSep(s, RequireString(a[0], "separator"), maxsplit, right);
    ev.Tick(static_cast<int64_t>(parts.size()));
    *out = Value::List(std::move(parts));
    return true;
  }
  if (name == "splitlines") {
    ArgBinder a(name, args, {"keepends"});
    const bool keep = a[0].Truthy();
    std::vector<Value> lines;
    size_t start = 0;
    for (size_t i = 0; i < s.size();) {
      size_t len;
      const char32_t c = utf8::Decode(s, i, &len);
      const bool nl = c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D || c == 0x1E ||
                      c == 0x85 || c == 0x2028 || c == 0x2029;
      if (!nl) {
        i += len;
        continue;
      }
      size_t end = i + len;
      if (c == '\r' && end < s.size() && s[end] == '\n') ++end;
      lines.push_back(Value::String(s.substr(start, (keep ? end : i) - start)));
      start = i = end;
    }
    if (start < s.size()) lines.push_back(Value::String(s.substr(start)));
    ev.Tick(static_cast<int64_t>(lines.size()));
    *out = Value::List(std::move(lines));
    return true;
  }
  if (name == "replace") {
    ArgBinder a(name, args, {"old", "new", "count"}, 2);
    const std::string& from = RequireString(a[0], "replace() arg 1");
    const std::string& to = RequireString(a[1], "replace() arg 2");
    int64_t count = a.has(2) ? ToInt(a[2], "replace() count") : -1;
    std::string r;
    if (from.empty()) {
      // Python inserts `to` before every code point and at the end.
      const auto offs = utf8::Offsets(s);
      for (size_t k = 0; k < offs.size(); ++k) {
        if (count != 0) {
          r += to;
          --count;
        }
        if (k + 1 < offs.size()) r.append(s, offs[k], offs[k + 1] - offs[k]);
        ev.CheckSize(r.size());
      }
    } else {
      size_t pos = 0;
      while (count != 0) {
        const size_t p = s.find(from, pos);
        if (p == std::string::npos) break;
        r.append(s, pos, p - pos);
        r += to;
        ev.CheckSize(r.size());
        pos = p + from.size();
        --count;
      }
      r.append(s, pos, std::string::npos);
    }
    str(std::move(r));
    return true;
  }
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex" || name == "count") {
    ArgBinder a(name, args, {"sub", "start", "end"}, 1);
    const std::string& sub = RequireString(a[0], std::string(name) + "() arg");
    const size_t b = ByteOffset(s, a[1], 0);
    const size_t e = std::max(b, ByteOffset(s, a[2], s.size()));
    const std::string_view view = std::string_view(s).substr(b, e - b);
    if (name == "count") {
      int64_t n = 0;
      if (sub.empty()) {
        n = static_cast<int64_t>(utf8::Length(view)) + 1;
      } else {
        for (size_t p = view.find(sub); p != std::string_view::npos; p = view.find(sub, p + sub.size())) ++n;
      }
      *out = Value::Int(n);
      return true;
    }
    const bool rev = name[0] == 'r';
    const size_t p = rev ? view.rfind(sub) : view.find(sub);
    if (p == std::string_view::npos) {
      if (name == "index" || name == "rindex") ThrowRender("substring not found");
      *out = Value::Int(-1);
    } else {
      *out = Value::Int(CpIndex(s, b + p));
    }
    return true;
  }
  if (name == "join") {
    ArgBinder a(name, args, {"iterable"}, 1);
    std::string r;
    bool first = true;
    for (const auto& v : ev.Iterate(a[0])) {
      if (!first) r += s;
      first = false;
      if (!v.is_string()) {
        ThrowRender(fmt::format("sequence item: expected str instance, {} found", TypeName(v)));
      }
      r += v.str();
      ev.CheckSize(r.size());
    }
    str(std::move(r));
    return true;
  }
  if (name == "format") {
    str(PyStrFormat(ev, s, args));
    return true;
  }
  if (name == "isalpha") { *out = Value::Bool(AllChars(s, utf8::IsAlpha)); return true; }
  if (name == "isdigit" || name == "isdecimal" || name == "isnumeric") { *out = Value::Bool(AllChars(s, utf8::IsDigit)); return true; }
  if (name == "isalnum") { *out = Value::Bool(AllChars(s, utf8::IsAlnum)); return true; }
  if (name == "isspace") { *out = Value::Bool(AllChars(s, utf8::IsSpace)); return true; }
  if (name == "isascii") { *out = Value::Bool(utf8::IsAscii(s)); return true; }
  if (name == "islower" || name == "isupper") {
    bool cased = false, ok = true;
    for (size_t i = 0; i < s.size();) {
      size_t len;
      const char32_t c = utf8::Decode(s, i, &len);
      i += len;
      if (name == "islower" ? utf8::IsUpper(c) : utf8::IsLower(c)) ok = false;
      if (utf8::IsCased(c)) cased = true;
    }
    *out = Value::Bool(ok && cased);
    return true;
  }
  if (name == "removeprefix" || name == "removesuffix") {
    ArgBinder a(name, args, {"affix"}, 1);
    const std::string& x = RequireString(a[0], std::string(name) + "() arg");
    std::string r = s;
    if (name == "removeprefix" && s.compare(0, x.size(), x) == 0) r = s.substr(x.size());
    if (name == "removesuffix" && s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0) {
      r = s.substr(0, s.size() - x.size());
    }
    str(std::move(r));
    return true;
  }
  if (name == "partition" || name == "rpartition") {
    ArgBinder a(name, args, {"sep"}, 1);
    const std::string& sep = RequireString(a[0], "separator");
    if (sep.empty()) ThrowRender("empty separator");
    const size_t p = name == "partition" ? s.find(sep) : s.rfind(sep);
    std::vector<Value> parts;
    if (p == std::string::npos) {
      parts = name == "partition"
                  ? std::vector<Value>{Value::String(s), Value::String(""), Value::String("")}
                  : std::vector<Value>{Value::String(""), Value::String(""), Value::String(s)};
    } else {
      parts = {Value::String(s.substr(0, p)), Value::String(sep), Value::String(s.substr(p + sep.size()))};
    }
    *out = Value::List(std::move(parts), true);
    return true;
  }
  if (name == "center" || name == "ljust" || name == "rjust") {
    ArgBinder a(name, args, {"width", "fillchar"}, 1);
    const int align = name == "ljust" ? -1 : name == "rjust" ? 1 : 0;
    str(Pad(ev, s, ToInt(a[0], "width"), a[1], align));
    return true;
  }
  if (name == "zfill") {
    ArgBinder a(name, args, {"width"}, 1);
    const int64_t width = ToInt(a[0], "width");
    const int64_t len = static_cast<int64_t>(utf8::Length(s));
    if (width <= len) {
      str(s);
      return true;
    }
    ev.CheckSize(static_cast<size_t>(width));
    const bool sign = !s.empty() && (s[0] == '+' || s[0] == '-');
    std::string r = sign ? s.substr(0, 1) : "";
    r.append(static_cast<size_t>(width - len), '0');
    r += sign ? s.substr(1) : s;
    str(std::move(r));
    return true;
  }
  if (name == "swapcase") {
    std::string r;
    for (size_t i = 0; i < s.size();) {
      size_t len;
      const char32_t c = utf8::Decode(s, i, &len);
      const std::string one = s.substr(i, len);
      r += utf8::IsUpper(c) ? utf8::Lower(one) : utf8::IsLower(c) ? utf8::Upper(one) : one;
      i += len;
    }
    str(std::move(r));
    return true;
  }
  if (name == "expandtabs") {
    ArgBinder a(name, args, {"tabsize"});
    str(ExpandTabs(ev, s, a.has(0) ? ToInt(a[0], "tabsize") : 8));
    return true;
  }
  if (name == "isidentifier" || name == "isprintable" || name == "istitle") {
    ArgBinder(name, args, {});
    bool r = name != "isidentifier" || !s.empty();
    if (name == "istitle") {
      r = IsTitle(s);
    } else {
      for (size_t i = 0; r && i < s.size();) {
        size_t len;
        const char32_t c = utf8::Decode(s, i, &len);
        r = name == "isprintable" ? utf8::IsPrintable(c)
            : i == 0              ? utf8::IsIdentifierStart(c)
                                  : utf8::IsIdentifierContinue(c);
        i += len;
      }
    }
    *out = Value::Bool(r);
    return true;
  }
  if (name == "format_map") {
    // Jinja2's sandbox formats format_map(m) as format(**m), safely.
    if (args.pos.size() != 1 || !args.kw.empty()) ThrowRender("format_map() takes exactly one argument");
    const Value& m = args.pos[0];
    CallArgs fa;
    // Any other mapping argument fails at its first named field, as in Python.
    if (m.is_dict() && !m.is_namespace()) fa.kw = m.dict().entries;
    str(PyStrFormat(ev, s, fa));
    return true;
  }
  if (name == "maketrans") {
    *out = MakeTrans(args);
    return true;
  }
  if (name == "translate") {
    ArgBinder a(name, args, {"table"}, 1);
    str(Translate(ev, s, a[0]));
    return true;
  }
  // encode: tern has no bytes type (CallBuiltinMethod reports it unsupported).
  return false;
}

}  // namespace tern::jinja
