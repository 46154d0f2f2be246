// The grammar form every constraint is compiled to: rules of expressions
// over Unicode characters (EBNF, GBNF/xgrammar style). JSON Schema is
// translated to it (json_schema.h), regexes parse straight into it
// (regex_parser.h) and EBNF text is read by ebnf_parser.h. automaton.h turns
// it into a byte-level pushdown automaton.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tern::grammar {

// A half-open-free closed range of Unicode code points [lo, hi].
using CodeRange = std::pair<uint32_t, uint32_t>;

struct Expr {
  enum class Kind : uint8_t {
    kEmpty,    // matches ""
    kLiteral,  // `bytes`, exactly (UTF-8)
    kClass,    // one code point in `ranges` (or not in them, `negated`)
    kRef,      // the rule `name`
    kSeq,      // children in order
    kAlt,      // one of children
    kRepeat,   // children[0] between min and max times (max -1: unbounded)
  };
  Kind kind = Kind::kEmpty;
  std::string bytes;             // kLiteral
  std::vector<CodeRange> ranges;  // kClass
  bool negated = false;          // kClass
  std::string name;              // kRef
  std::vector<Expr> children;    // kSeq, kAlt, kRepeat
  int64_t min = 0, max = -1;     // kRepeat

  static Expr Empty() { return Expr{}; }
  static Expr Literal(std::string b) {
    Expr e;
    e.kind = Kind::kLiteral;
    e.bytes = std::move(b);
    return e;
  }
  static Expr Class(std::vector<CodeRange> r, bool negated = false) {
    Expr e;
    e.kind = Kind::kClass;
    e.ranges = std::move(r);
    e.negated = negated;
    return e;
  }
  static Expr Ref(std::string n) {
    Expr e;
    e.kind = Kind::kRef;
    e.name = std::move(n);
    return e;
  }
  static Expr Seq(std::vector<Expr> c) { return Node(Kind::kSeq, std::move(c)); }
  static Expr Alt(std::vector<Expr> c) { return Node(Kind::kAlt, std::move(c)); }
  static Expr Repeat(Expr child, int64_t min, int64_t max) {
    Expr e = Node(Kind::kRepeat, {});
    e.children.push_back(std::move(child));
    e.min = min;
    e.max = max;
    return e;
  }

 private:
  static Expr Node(Kind k, std::vector<Expr> c) {
    Expr e;
    e.kind = k;
    e.children = std::move(c);
    return e;
  }
};

struct Rule {
  std::string name;
  Expr body;
};

// Rules by name; the first rule named `root` (or the first rule) is the start.
struct GrammarAst {
  std::vector<Rule> rules;
  std::string root = "root";
};

// Appends the UTF-8 encoding of code point cp (cp <= 0x10FFFF) to out.
void AppendUtf8(uint32_t cp, std::string* out);

}  // namespace tern::grammar

namespace tern::grammar {
// Code point sets as sorted, disjoint, non-adjacent ranges.
std::vector<CodeRange> NormalizeRanges(std::vector<CodeRange> r);
// [0, 0x10FFFF] minus r (surrogates D800-DFFF excluded: UTF-8 cannot hold them).
std::vector<CodeRange> ComplementRanges(const std::vector<CodeRange>& r);
std::vector<CodeRange> IntersectRanges(const std::vector<CodeRange>& a, const std::vector<CodeRange>& b);
}  // namespace tern::grammar

namespace tern::grammar {
// The expression as EBNF text (ebnf_parser.h reads it back to the same language).
std::string ToEbnf(const Expr& e);
}  // namespace tern::grammar
