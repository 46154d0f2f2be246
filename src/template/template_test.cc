// Public API behaviour: errors with positions, limits, clock injection, key
// order, thread safety. Expected strings follow Python/Jinja2 semantics (the
// goldens in golden_test.cc cover the language itself).
#include "template/template.h"

#include <thread>

#include <gtest/gtest.h>

namespace tern::jinja {
namespace {

using Json = nlohmann::ordered_json;

Result<std::string> RenderStr(std::string_view src, const Json& ctx = Json::object(), const RenderOptions& o = {}) {
  auto tpl = Template::Parse(src);
  if (!tpl.ok()) return tpl.status();
  return tpl->Render(ctx, o);
}

std::string ErrorOf(std::string_view src, const Json& ctx = Json::object(), const RenderOptions& o = {}) {
  auto r = RenderStr(src, ctx, o);
  EXPECT_FALSE(r.ok()) << "rendered: " << (r.ok() ? *r : "");
  return r.ok() ? "" : r.status().message();
}

TEST(Template, RendersWithContext) {
  auto r = RenderStr("{% for m in messages %}{{ m.role }}:{{ m.content }};{% endfor %}",
                     Json::parse(R"({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]})"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, "user:hi;assistant:yo;");
}

TEST(Template, SyntaxErrorsReportLineAndColumn) {
  EXPECT_EQ(ErrorOf("line one\n{% if x %}\n  {{ 1 + }}\n{% endif %}"),
            "template syntax error at line 3, column 10: unexpected 'end of print statement'");
  EXPECT_EQ(ErrorOf("ab\n  {% frobnicate %}"), "template syntax error at line 2, column 6: encountered unknown tag 'frobnicate'");
  EXPECT_EQ(ErrorOf("{{ 'abc }}"), "template syntax error at line 1, column 4: unexpected end of string");
  EXPECT_EQ(ErrorOf("{% for x in y %}\n{{ x }}"),
            "template syntax error at line 2, column 8: unexpected end of template, expected 'endfor' or 'else'");
  EXPECT_EQ(ErrorOf("{# never closed"), "template syntax error at line 1, column 1: missing end of comment tag");
  // Columns count code points, not bytes.
  EXPECT_EQ(ErrorOf("héé {{ ) }}"), "template syntax error at line 1, column 8: unexpected ')'");
}

TEST(Template, RenderErrorsReportLocation) {
  EXPECT_EQ(ErrorOf("ok\n  {{ 1 // 0 }}"), "template error at line 2, column 8: integer division or modulo by zero");
  EXPECT_EQ(ErrorOf("{{ x.y.z }}", Json::parse(R"({"x": {}})")),
            "template error at line 1, column 7: 'dict object' has no attribute 'y'");
  EXPECT_EQ(ErrorOf("{{ missing + 1 }}"), "template error at line 1, column 12: 'missing' is undefined");
}

TEST(Template, RaiseExceptionMessageIsVerbatim) {
  EXPECT_EQ(ErrorOf("{{ raise_exception('Conversation roles must alternate user/assistant') }}"),
            "Conversation roles must alternate user/assistant");
}

TEST(Template, ContextKeyOrderIsKept) {
  auto r = RenderStr("{{ args|tojson }} {% for k, v in args.items() %}{{ k }}{% endfor %}",
                     Json::parse(R"({"args": {"zeta": 1, "alpha": [1.0, "é"], "mid": null}})"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, R"({"zeta": 1, "alpha": [1.0, "é"], "mid": null} zetaalphamid)");
}

TEST(Template, ClockIsInjected) {
  RenderOptions o;
  o.now = [] { return std::time_t{1741944413}; };  // 2025-03-14 09:26:53 UTC
  o.local_time = false;
  auto r = RenderStr("{{ strftime_now('%d %b %Y, %H:%M') }}", Json::object(), o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, "14 Mar 2025, 09:26");
}

TEST(Template, OutputLimit) {
  RenderOptions o;
  o.max_output_bytes = 1000;
  EXPECT_NE(ErrorOf("{% for i in range(1000) %}0123456789{% endfor %}", Json::object(), o).find("exceeds the limit of 1000 bytes"),
            std::string::npos);
  // A value built without output is bounded too (string doubling).
  EXPECT_NE(ErrorOf("{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
                    Json::object(), o).find("exceeds the limit"),
            std::string::npos);
  EXPECT_NE(ErrorOf("{{ 'ab' * 100000 }}", Json::object(), o).find("exceeds the limit"), std::string::npos);
}

TEST(Template, LoopLimit) {
  RenderOptions o;
  o.max_loop_iterations = 10000;
  EXPECT_NE(ErrorOf("{% for i in range(1000) %}{% for j in range(1000) %}{% endfor %}{% endfor %}", Json::object(), o)
                .find("work limit"),
            std::string::npos);
  // The sandbox refuses huge ranges outright, as Jinja2's does.
  EXPECT_NE(ErrorOf("{{ range(10000000)|length }}").find("MAX_RANGE"), std::string::npos);
}

TEST(Template, RecursionLimit) {
  EXPECT_NE(ErrorOf("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}").find("macro recursion deeper than 64"),
            std::string::npos);
  // Exponential fan-out stays within the work budget.
  RenderOptions o;
  o.max_loop_iterations = 20000;
  EXPECT_NE(ErrorOf("{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(40) }}",
                    Json::object(), o).find("work limit"),
            std::string::npos);
}

TEST(Template, DeepNestingIsAnErrorNotACrash) {
  std::string parens = std::string(5000, '(') + "1" + std::string(5000, ')');
  EXPECT_NE(ErrorOf("{{ " + parens + " }}").find("nesting too deep"), std::string::npos);
  std::string ifs;
  for (int i = 0; i < 3000; ++i) ifs += "{% if true %}";
  EXPECT_NE(ErrorOf(ifs).find("nesting too deep"), std::string::npos);
  std::string nots;
  for (int i = 0; i < 5000; ++i) nots += "not ";
  EXPECT_NE(ErrorOf("{{ " + nots + "1 }}").find("nesting too deep"), std::string::npos);
}

TEST(Template, NoFileAccess) {
  EXPECT_NE(ErrorOf("{% include '/etc/passwd' %}").find("loader"), std::string::npos);
  EXPECT_NE(ErrorOf("{% extends 'base' %}").find("loader"), std::string::npos);
  EXPECT_NE(ErrorOf("{% import 'x' as y %}").find("loader"), std::string::npos);
}

TEST(Template, SandboxRejectsMutationUnlessAllowed) {
  const char* src = "{% set l = [1] %}{% set _ = l.append(2) %}{{ l }}";
  EXPECT_EQ(ErrorOf(src), "template error at line 1, column 37: access to attribute 'append' of 'list' object is unsafe.");
  RenderOptions o;
  o.allow_mutation = true;
  auto r = RenderStr(src, Json::object(), o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, "[1, 2]");
}

TEST(Template, ContextMustBeAnObject) {
  auto tpl = Template::Parse("x");
  ASSERT_TRUE(tpl.ok());
  EXPECT_FALSE(tpl->Render(Json::array()).ok());
  auto r = tpl->Render(nullptr);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "x");
}

TEST(Template, ParseOnceRenderConcurrently) {
  auto tpl = Template::Parse(
      "{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + m|length %}{% endfor %}{{ ns.n }}"
      "{% macro f(x) %}<{{ x }}>{% endmacro %}{{ f(name) }}");
  ASSERT_TRUE(tpl.ok()) << tpl.status().message();
  std::vector<std::thread> threads;
  std::vector<std::string> results(8);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      Json ctx = {{"messages", Json::array({"ab", "cde"})}, {"name", "t" + std::to_string(t)}};
      for (int i = 0; i < 200; ++i) {
        auto r = tpl->Render(ctx);
        results[t] = r.ok() ? *r : r.status().message();
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 8; ++t) EXPECT_EQ(results[t], "5<t" + std::to_string(t) + ">");
}

TEST(Template, LargeIntegersAndFloatsFromJson) {
  auto r = RenderStr("{{ a }} {{ b }} {{ c }} {{ d }} {{ [a, c]|tojson }}",
                     Json::parse(R"({"a": 9223372036854775807, "b": 18446744073709551615, "c": 1.0, "d": -0.0})"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, "9223372036854775807 1.8446744073709552e+19 1.0 -0.0 [9223372036854775807, 1.0]");
  EXPECT_NE(ErrorOf("{{ a + 1 }}", Json::parse(R"({"a": 9223372036854775807})")).find("overflow"), std::string::npos);
}

}  // namespace
}  // namespace tern::jinja
