// The grammar front ends (EBNF, regex, JSON Schema) and the automaton, by
// matching byte strings. Expected answers come from the definitions
// (arithmetic for number ranges, hand-checked strings), not from the code.
#include <chrono>
#include <random>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "grammar/json_schema_numbers.h"
#include "grammar/test_util.h"

namespace tern::grammar {
namespace {
using testing::ByteVocab;
using testing::FullMatch;

std::shared_ptr<const CompiledGrammar> Compile(ConstraintKind kind, const std::string& text,
                                               JsonSchemaOptions json = {}) {
  static auto vocab = ByteVocab();
  auto g = testing::CompileFor({.kind = kind, .text = text, .json = json}, vocab);
  EXPECT_TRUE(g.ok()) << text << ": " << g.status().message();
  return g.ok() ? *g : nullptr;
}

std::string CompileError(ConstraintKind kind, const std::string& text, JsonSchemaOptions json = {}) {
  auto g = testing::CompileFor({.kind = kind, .text = text, .json = json}, ByteVocab());
  return g.ok() ? "" : g.status().message();
}

TEST(Ebnf, Basics) {
  auto g = Compile(ConstraintKind::kEbnf, R"(
    root ::= "{" pair ("," pair)* "}"   # comment
    pair ::= [a-z]+ ":" (num | "null")
    num ::= "-"? [0-9]{1,3} ("." [0-9]+)?
  )");
  EXPECT_TRUE(FullMatch(g, "{a:1}"));
  EXPECT_TRUE(FullMatch(g, "{ab:-12.5,c:null}"));
  EXPECT_FALSE(FullMatch(g, "{a:1234}"));
  EXPECT_FALSE(FullMatch(g, "{a:1"));
  EXPECT_FALSE(FullMatch(g, "{A:1}"));
}

TEST(Ebnf, RecursionAndUnicode) {
  auto g = Compile(ConstraintKind::kEbnf, "root ::= \"(\" root \")\" | [^()]\nx ::= \"unused\"");
  EXPECT_TRUE(FullMatch(g, "((a))"));
  EXPECT_TRUE(FullMatch(g, "(((\xe4\xbd\xa0)))"));  // one code point, three bytes
  EXPECT_FALSE(FullMatch(g, "((a)"));
  EXPECT_FALSE(FullMatch(g, "(\xe4\xbd)"));  // half a character
  auto any = Compile(ConstraintKind::kEbnf, "root ::= .{2}");
  EXPECT_TRUE(FullMatch(any, "\xf0\x9f\x98\x80x"));
  EXPECT_FALSE(FullMatch(any, "\xed\xa0\x80x"));  // a surrogate is not UTF-8
}

TEST(Ebnf, Errors) {
  EXPECT_NE(CompileError(ConstraintKind::kEbnf, "root ::= a\na ::= a \"x\"").find("left-recursive"), std::string::npos);
  EXPECT_NE(CompileError(ConstraintKind::kEbnf, "root ::= b").find("undefined rule 'b'"), std::string::npos);
  EXPECT_NE(CompileError(ConstraintKind::kEbnf, "a ::= \"x\"").find("no rule named 'root'"), std::string::npos);
  EXPECT_NE(CompileError(ConstraintKind::kEbnf, "root ::= \"x").find("line 1"), std::string::npos);
  EXPECT_NE(CompileError(ConstraintKind::kEbnf, "root ::= root \"x\"").find("left-recursive"), std::string::npos);
  EXPECT_NE(CompileError(ConstraintKind::kEbnf, "root ::= \"a\" root").find("matches no string"), std::string::npos);
  EXPECT_NE(CompileError(ConstraintKind::kEbnf, "root ::= (\"a\"*)* root").find("left-recursive"), std::string::npos);
}

TEST(Regex, Syntax) {
  auto g = Compile(ConstraintKind::kRegex, R"(^(\d{3})-[a-f\d]{2,}(x|y)?\.?$)");
  EXPECT_TRUE(FullMatch(g, "123-ab"));
  EXPECT_TRUE(FullMatch(g, "123-a0f9x."));
  EXPECT_FALSE(FullMatch(g, "12-ab"));
  EXPECT_FALSE(FullMatch(g, "123-a"));
  auto dot = Compile(ConstraintKind::kRegex, "a.c|\\s+|[^\\w]");
  EXPECT_TRUE(FullMatch(dot, "abc"));
  EXPECT_TRUE(FullMatch(dot, "a\xe2\x82\xac" "c"));  // € is one character
  EXPECT_FALSE(FullMatch(dot, "a\nc"));
  EXPECT_TRUE(FullMatch(dot, " \t\xe3\x80\x80"));  // U+3000 is \s in JavaScript
  EXPECT_TRUE(FullMatch(dot, "-"));
  EXPECT_FALSE(FullMatch(dot, "_"));
  auto esc = Compile(ConstraintKind::kRegex, R"(\u0041\x42\u{1F600}[\]\-]{2}\{1\})");
  EXPECT_TRUE(FullMatch(esc, "AB\xf0\x9f\x98\x80]-{1}"));
  for (const char* bad : {"(?=a)", "\\1", "a\\b", "(a", "a)", "*a", "\\p{L}", "a{2,1}", "x^"})
    EXPECT_FALSE(CompileError(ConstraintKind::kRegex, bad).empty()) << bad;
}

TEST(Regex, ExponentialIsBoundedAndRefused) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::string e = CompileError(ConstraintKind::kRegex, "(a|b)*a(a|b){40}");
  EXPECT_NE(e.find("too complex"), std::string::npos) << e;
  // Few states but each of many NFA states: ~10^5 states of up to ~10^5 NFA states each would take
  // ~20 GB and ~10^10 steps; the construction's step budget refuses it.
  const std::string nested = CompileError(ConstraintKind::kRegex, "(a{0,1000}){0,100}");
  EXPECT_NE(nested.find("too complex (its automaton needs over"), std::string::npos) << nested;
  // (a*)*b backtracks exponentially in backtracking engines; an automaton is linear.
  auto g = Compile(ConstraintKind::kRegex, "(a*)*b");
  EXPECT_FALSE(FullMatch(g, std::string(5000, 'a')));
  EXPECT_TRUE(FullMatch(g, std::string(5000, 'a') + "b"));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));
}

// Integer ranges against arithmetic, over a window around the bounds.
TEST(JsonSchemaNumbers, IntegerRanges) {
  const std::vector<std::pair<std::optional<int64_t>, std::optional<int64_t>>> cases = {
      {0, 100}, {-5, 5}, {17, 1234}, {-1234, -17}, {std::nullopt, 42}, {-42, std::nullopt}, {99, 100},
      {0, std::nullopt}, {1000, 1000}, {-9, -1}};
  for (const auto& [lo, hi] : cases) {
    auto g = Compile(ConstraintKind::kEbnf, "root ::= " + internal::IntegerRange(lo, hi));
    for (int64_t x = -1500; x <= 1500; ++x) {
      const bool want = (!lo || x >= *lo) && (!hi || x <= *hi);
      ASSERT_EQ(FullMatch(g, std::to_string(x)), want) << x << " in [" << lo.value_or(-999999) << ", " << hi.value_or(999999) << "]";
    }
    EXPECT_FALSE(FullMatch(g, "01"));
    EXPECT_FALSE(FullMatch(g, "-0"));
  }
}

TEST(JsonSchemaNumbers, NumberRanges) {
  using internal::Bound;
  std::mt19937 rng(7);
  const std::vector<std::pair<std::optional<Bound>, std::optional<Bound>>> cases = {
      {Bound{0, false}, Bound{10, false}}, {Bound{0, true}, Bound{10, true}}, {Bound{-3, false}, Bound{2, true}},
      {Bound{-3, true}, std::nullopt},     {std::nullopt, Bound{-2, false}},  {Bound{5, false}, Bound{5, false}}};
  for (const auto& [lo, hi] : cases) {
    auto g = Compile(ConstraintKind::kEbnf, "root ::= " + internal::NumberRange(lo, hi));
    for (int i = 0; i < 3000; ++i) {
      const int whole = int(rng() % 30) - 15;
      const int frac = int(rng() % 4);
      std::string s = std::to_string(whole);
      double x = whole;
      if (frac == 1) s += ".0";
      if (frac == 2) s += ".5", x += whole < 0 || s[0] == '-' ? -0.5 : 0.5;
      if (frac == 3) s += ".05", x += whole < 0 || s[0] == '-' ? -0.05 : 0.05;
      const bool want = (!lo || (lo->exclusive ? x > double(lo->value) : x >= double(lo->value))) &&
                        (!hi || (hi->exclusive ? x < double(hi->value) : x <= double(hi->value)));
      ASSERT_EQ(FullMatch(g, s), want) << s;
    }
  }
}

TEST(JsonSchema, ObjectsAndOrder) {
  auto g = Compile(ConstraintKind::kJsonSchema, R"({"type":"object","properties":{
      "name":{"type":"string","minLength":1,"maxLength":4},
      "age":{"type":"integer","minimum":0,"maximum":150},
      "tags":{"type":"array","items":{"enum":["a","b"]},"maxItems":2}},
      "required":["name"]})");
  EXPECT_TRUE(FullMatch(g, R"({"name":"bob"})"));
  EXPECT_TRUE(FullMatch(g, R"({"name":"bob","age":3,"tags":["a","b"]})"));
  EXPECT_TRUE(FullMatch(g, R"({"name":"bob","tags":[]})"));
  EXPECT_FALSE(FullMatch(g, R"({"age":3})"));
  EXPECT_FALSE(FullMatch(g, R"({"name":""})"));
  EXPECT_FALSE(FullMatch(g, R"({"name":"bobby"})"));
  EXPECT_FALSE(FullMatch(g, R"({"name":"bob","age":151})"));
  EXPECT_FALSE(FullMatch(g, R"({"name":"bob","tags":["a","b","a"]})"));
  EXPECT_FALSE(FullMatch(g, R"({"name":"bob","extra":1})"));  // strict: no additional properties
  EXPECT_FALSE(FullMatch(g, R"({"name": "bob"})"));           // compact white space
  auto spaced = Compile(ConstraintKind::kJsonSchema, R"({"type":"object","properties":{"a":{"type":"array"}}})",
                        {.whitespace = JsonSchemaOptions::Whitespace::kSpaced});
  EXPECT_TRUE(FullMatch(spaced, R"({"a": [1, {"x": null}]})"));
  auto loose = Compile(ConstraintKind::kJsonSchema, R"({"properties":{"a":{"type":"integer"}}})", {.strict = false});
  EXPECT_TRUE(FullMatch(loose, R"({"b":"x","c":[]})"));
  EXPECT_TRUE(FullMatch(loose, R"({"a":1,"b":2})"));
  EXPECT_FALSE(FullMatch(loose, R"({"a":"1"})"));   // "a" cannot come back as an additional property
  EXPECT_FALSE(FullMatch(loose, R"({"b":0,"a":"1"})"));
  EXPECT_TRUE(FullMatch(loose, R"("not an object")"));
  EXPECT_TRUE(FullMatch(loose, R"({"ab":"1","\u0061":2})"));
}

TEST(JsonSchema, RefsFormatsAndCombinators) {
  auto tree = Compile(ConstraintKind::kJsonSchema, R"({"$ref":"#/$defs/node","$defs":{"node":{"type":"object",
      "properties":{"v":{"type":"integer"},"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},
      "required":["v"]}}})");
  EXPECT_TRUE(FullMatch(tree, R"({"v":1,"kids":[{"v":2},{"v":3,"kids":[{"v":4,"kids":[]}]}]})"));
  EXPECT_FALSE(FullMatch(tree, R"({"v":1,"kids":[{"kids":[]}]})"));
  auto fmt = Compile(ConstraintKind::kJsonSchema, R"({"type":"array","prefixItems":[{"format":"date"},
      {"format":"date-time"},{"format":"uuid"},{"format":"email"},{"format":"ipv4"},{"format":"time"}]})");
  EXPECT_TRUE(FullMatch(fmt, R"(["2024-02-29","2023-12-31T23:59:59Z","123e4567-e89b-12d3-a456-426614174000","a.b@c.io","192.168.0.255","01:02:03+05:30"])"));
  EXPECT_FALSE(FullMatch(fmt, R"(["2023-02-29","2023-12-31T23:59:59Z","123e4567-e89b-12d3-a456-426614174000","a.b@c.io","192.168.0.255","01:02:03+05:30"])"));
  EXPECT_FALSE(FullMatch(fmt, R"(["2024-02-29","2023-12-31T23:59:59Z","123e4567-e89b-12d3-a456-426614174000","a.b@c.io","192.168.0.256","01:02:03+05:30"])"));
  auto any = Compile(ConstraintKind::kJsonSchema, R"({"anyOf":[{"type":"string","pattern":"^[A-Z]\"x"},{"type":"null"}]})");
  EXPECT_TRUE(FullMatch(any, R"("Q\"xyz")"));
  EXPECT_TRUE(FullMatch(any, "null"));
  EXPECT_FALSE(FullMatch(any, R"("q\"x")"));
  auto all = Compile(ConstraintKind::kJsonSchema, R"({"allOf":[{"properties":{"a":{"type":"integer"}},"required":["a"]},
      {"properties":{"b":{"type":"boolean"}},"required":["b"]}],"additionalProperties":false})");
  EXPECT_TRUE(FullMatch(all, R"({"a":1,"b":true})"));
  EXPECT_FALSE(FullMatch(all, R"({"a":1})"));
  auto nullable = Compile(ConstraintKind::kJsonSchema, R"({"type":["string","null"],"maxLength":2})");
  EXPECT_TRUE(FullMatch(nullable, "null"));
  EXPECT_TRUE(FullMatch(nullable, R"("\n")"));
  EXPECT_FALSE(FullMatch(nullable, R"("abc")"));
}

// Schemas a client can send to make the compiler's work or stack unbounded
// are refused with an error (a 400), quickly: a chain of $refs each nesting
// the next (9,000 of them crashed the server: depth restarted at each $ref),
// allOf members that reference the level below twice (2^60 merges), and anyOf
// with sibling keywords nested (each branch compiled with them: 3^21).
TEST(JsonSchema, RefChainsAndMultiplyingCombinatorsAreBounded) {
  const auto t0 = std::chrono::steady_clock::now();
  nlohmann::json defs = nlohmann::json::object();
  for (int i = 0; i < 9000; ++i)
    defs["d" + std::to_string(i)] = {{"type", "object"},
                                     {"properties", {{"x", {{"$ref", "#/$defs/d" + std::to_string(i + 1)}}}}}};
  defs["d9000"] = {{"type", "string"}};
  const nlohmann::json chain = {{"$defs", defs}, {"$ref", "#/$defs/d0"}};
  EXPECT_NE(CompileError(ConstraintKind::kJsonSchema, chain.dump()).find("counting through $ref"), std::string::npos);
  // (a chain of 100 compiles: the limit is on nesting, not on $refs)
  nlohmann::json short_defs = nlohmann::json::object();
  for (int i = 0; i < 100; ++i)
    short_defs["d" + std::to_string(i)] = {{"type", "object"},
                                           {"properties", {{"x", {{"$ref", "#/$defs/d" + std::to_string(i + 1)}}}}}};
  short_defs["d100"] = {{"type", "string"}};
  EXPECT_NE(Compile(ConstraintKind::kJsonSchema, nlohmann::json({{"$defs", short_defs}, {"$ref", "#/$defs/d0"}}).dump()),
            nullptr);
  nlohmann::json doubling = nlohmann::json::object();
  doubling["d0"] = {{"type", "object"}};
  for (int k = 1; k <= 60; ++k) {
    const std::string below = "#/$defs/d" + std::to_string(k - 1);
    doubling["d" + std::to_string(k)] = {{"allOf", {{{"$ref", below}}, {{"$ref", below}}}}};
  }
  const nlohmann::json all_of = {{"$defs", doubling}, {"$ref", "#/$defs/d60"}};
  EXPECT_NE(CompileError(ConstraintKind::kJsonSchema, all_of.dump()).find("too large a grammar"), std::string::npos);
  nlohmann::json branches = {{"type", "string"}};
  for (int k = 0; k < 21; ++k)
    branches = {{"type", "object"}, {"properties", {{"x", branches}}}, {"anyOf", {nlohmann::json::object(),
                                                                                  nlohmann::json::object(),
                                                                                  nlohmann::json::object()}}};
  EXPECT_NE(CompileError(ConstraintKind::kJsonSchema, branches.dump()).find("too large a grammar"), std::string::npos);
  // A 900 KB enum beside 10,000 anyOf branches: each branch compiled with it carried the whole literal.
  nlohmann::json wide = {{"enum", {std::string(900000, 'x')}}, {"anyOf", nlohmann::json::array()}};
  for (int i = 0; i < 10000; ++i) wide["anyOf"].push_back(nlohmann::json::object());
  EXPECT_NE(CompileError(ConstraintKind::kJsonSchema, wide.dump()).find("too large a grammar"), std::string::npos);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 60.0);
  // A keyword of the wrong JSON type is the schema's error, not an exception.
  EXPECT_NE(CompileError(ConstraintKind::kJsonSchema, R"({"type":"string","nullable":"yes"})").find("wrong type"),
            std::string::npos);
}

// A chain of 50,000 rules (0.9 MB; 1 MB is accepted) compiles and is
// exact: inlining copied each callee's whole body into its caller (gigabytes,
// 35-45 s holding a build slot), and the component search recursed once a rule.
TEST(Ebnf, LongRuleChainsCompile) {
  const int n = 50000;
  std::string g = "root::=r0\n";
  for (int i = 0; i < n; ++i) g += "r" + std::to_string(i) + "::=\"a\" r" + std::to_string(i + 1) + "\n";
  g += "r" + std::to_string(n) + "::=\"b\"\n";
  ASSERT_EQ(CompileError(ConstraintKind::kEbnf, g), "");
  auto compiled = Compile(ConstraintKind::kEbnf, g);
  EXPECT_TRUE(FullMatch(compiled, std::string(n, 'a') + "b"));
  EXPECT_FALSE(FullMatch(compiled, std::string(n - 1, 'a') + "b"));
  EXPECT_FALSE(FullMatch(compiled, std::string(n, 'a')));
}

// In strict mode (the default) too, a subschema with annotations only is
// any JSON value, as `true` is: its objects once had to be empty.
TEST(JsonSchema, AnnotationOnlySubschemasTakeAnyValue) {
  auto g = Compile(ConstraintKind::kJsonSchema,
                   R"({"type":"object","properties":{"meta":{"description":"free-form"}},"required":["meta"]})");
  EXPECT_TRUE(FullMatch(g, R"({"meta":{"a":[1,{"b":null}]}})"));
  EXPECT_TRUE(FullMatch(g, R"({"meta":"x"})"));
  EXPECT_FALSE(FullMatch(g, R"({"meta":1,"other":2})")) << "the listing object stays closed";
  auto any = Compile(ConstraintKind::kJsonSchema, "{}");
  EXPECT_TRUE(FullMatch(any, R"({"k":{"x":1}})"));
  EXPECT_TRUE(FullMatch(any, "[1,2]"));
}

TEST(JsonSchema, ErrorsNameTheKeyword) {
  EXPECT_NE(CompileError(ConstraintKind::kJsonSchema, R"({"type":"object","patternProperties":{}})").find("'patternProperties'"),
            std::string::npos);
  EXPECT_NE(CompileError(ConstraintKind::kJsonSchema, R"({"type":"string","format":"ipv9"})").find("'ipv9'"), std::string::npos);
  EXPECT_NE(CompileError(ConstraintKind::kJsonSchema, R"({"$ref":"http://x/y"})").find("not a local reference"), std::string::npos);
  EXPECT_NE(CompileError(ConstraintKind::kJsonSchema, R"({"type":"number","minimum":0.5})").find("fractional"), std::string::npos);
  EXPECT_NE(CompileError(ConstraintKind::kJsonSchema, "{").find("not valid JSON"), std::string::npos);
  // required is bounded as properties are (it was matched against them one by one).
  std::string req = R"({"type":"object","required":[)";
  for (int i = 0; i < 1001; ++i) req += (i ? ",\"k" : "\"k") + std::to_string(i) + "\"";
  EXPECT_NE(CompileError(ConstraintKind::kJsonSchema, req + "]}").find("more than 1000 required properties"),
            std::string::npos);
  // A required key no property names is a required key of any value; duplicates of one, one key.
  auto named = Compile(ConstraintKind::kJsonSchema,
                       R"({"type":"object","properties":{"a":{"type":"integer"}},"required":["b","a","b"],
                           "additionalProperties":false})");
  EXPECT_TRUE(FullMatch(named, R"({"a":1,"b":[true]})"));
  EXPECT_FALSE(FullMatch(named, R"({"a":1})"));
  EXPECT_FALSE(FullMatch(named, R"({"a":1,"b":2,"b":3})"));
  // Unbounded self-reference without a base case matches nothing.
  EXPECT_NE(CompileError(ConstraintKind::kJsonSchema, R"({"$ref":"#"})").find("left-recursive"), std::string::npos);
  // Deep nesting and a 10 MB schema are refused quickly.
  std::string deep;
  for (int i = 0; i < 500; ++i) deep += R"({"type":"array","items":)";
  deep += "{}";
  for (int i = 0; i < 500; ++i) deep += "}";
  EXPECT_NE(CompileError(ConstraintKind::kJsonSchema, deep).find("nested deeper"), std::string::npos);
  std::string big = R"({"enum":[")" + std::string(10 << 20, 'x') + R"("]})";
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_NE(CompileError(ConstraintKind::kJsonSchema, big).find("at most"), std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
}

}  // namespace
}  // namespace tern::grammar
