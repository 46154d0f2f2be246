#include "grammar/ast.h"

#include <algorithm>

#include <fmt/format.h>

namespace tern::grammar {

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(char(cp));
  } else if (cp < 0x800) {
    out->push_back(char(0xC0 | (cp >> 6)));
    out->push_back(char(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(char(0xE0 | (cp >> 12)));
    out->push_back(char(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(char(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(char(0xF0 | (cp >> 18)));
    out->push_back(char(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(char(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(char(0x80 | (cp & 0x3F)));
  }
}

std::vector<CodeRange> NormalizeRanges(std::vector<CodeRange> r) {
  std::sort(r.begin(), r.end());
  std::vector<CodeRange> out;
  for (const auto& [lo, hi] : r) {
    if (!out.empty() && lo <= out.back().second + 1) out.back().second = std::max(out.back().second, hi);
    else out.emplace_back(lo, hi);
  }
  return out;
}

std::vector<CodeRange> ComplementRanges(const std::vector<CodeRange>& r) {
  const std::vector<CodeRange> in = NormalizeRanges(
      [&] {
        auto v = r;
        v.emplace_back(0xD800, 0xDFFF);
        return v;
      }());
  std::vector<CodeRange> out;
  uint32_t next = 0;
  for (const auto& [lo, hi] : in) {
    if (lo > next) out.emplace_back(next, lo - 1);
    next = std::max(next, hi + 1);
  }
  if (next <= 0x10FFFF) out.emplace_back(next, 0x10FFFF);
  return out;
}

std::vector<CodeRange> IntersectRanges(const std::vector<CodeRange>& a0, const std::vector<CodeRange>& b0) {
  const auto a = NormalizeRanges(a0), b = NormalizeRanges(b0);
  std::vector<CodeRange> out;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const uint32_t lo = std::max(a[i].first, b[j].first), hi = std::min(a[i].second, b[j].second);
    if (lo <= hi) out.emplace_back(lo, hi);
    if (a[i].second < b[j].second) ++i;
    else ++j;
  }
  return out;
}

}  // namespace tern::grammar

namespace tern::grammar {
namespace {
void AppendClassChar(uint32_t cp, std::string* out) {
  if (cp == '\\' || cp == ']' || cp == '-' || cp == '^' || cp == '[' || cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp < 0xA0)) {
    *out += cp <= 0xFF ? fmt::format("\\x{:02x}", cp) : fmt::format("\\u{:04x}", cp);
  } else {
    AppendUtf8(cp, out);
  }
}
void Print(const Expr& e, std::string* out) {
  switch (e.kind) {
    case Expr::Kind::kEmpty: *out += "\"\""; return;
    case Expr::Kind::kLiteral: {
      *out += '"';
      for (unsigned char c : e.bytes) {
        if (c == '"' || c == '\\') *out += '\\', *out += char(c);
        else if (c < 0x20 || c == 0x7F) *out += fmt::format("\\x{:02x}", c);
        else *out += char(c);  // UTF-8 bytes pass through (the parser reads code points)
      }
      *out += '"';
      return;
    }
    case Expr::Kind::kClass:
      *out += e.negated ? "[^" : "[";
      for (const auto& [lo, hi] : e.ranges) {
        auto put = [&](uint32_t cp) {
          if (cp > 0xFFFF) *out += fmt::format("\\U{:08x}", cp);
          else AppendClassChar(cp, out);
        };
        put(lo);
        if (hi != lo) *out += '-', put(hi);
      }
      *out += "]";
      return;
    case Expr::Kind::kRef: *out += e.name; return;
    case Expr::Kind::kSeq:
    case Expr::Kind::kAlt:
      *out += "(";
      for (size_t i = 0; i < e.children.size(); ++i) {
        if (i) *out += e.kind == Expr::Kind::kAlt ? " | " : " ";
        Print(e.children[i], out);
      }
      if (e.children.empty()) *out += "\"\"";
      *out += ")";
      return;
    case Expr::Kind::kRepeat:
      *out += "(";
      Print(e.children[0], out);
      *out += e.max < 0 ? fmt::format("){{{},}}", e.min) : fmt::format("){{{},{}}}", e.min, e.max);
      return;
  }
}
}  // namespace

std::string ToEbnf(const Expr& e) {
  std::string out;
  Print(e, &out);
  return out;
}

}  // namespace tern::grammar
