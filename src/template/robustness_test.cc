// Fuzz-ish robustness: mutated real templates, random token soup and hostile
// templates must end in output or a clear error, never a crash or a hang
// (this test runs under ASan+UBSan in CI).
#include <chrono>
#include <random>

#include <gtest/gtest.h>

#include "base/mapped_file.h"
#include "template/chat.h"
#include "template/template.h"

namespace tern::jinja {
namespace {

using Json = nlohmann::ordered_json;

std::string TemplateText(const std::string& file) {
  const char* src = std::getenv("TERN_SOURCE_DIR");
  auto text = ReadFileToString(std::string(src ? src : ".") + "/tests/golden/template/templates/" + file);
  return text.ok() ? *text : std::string();
}

Json Context() {
  return Json::parse(R"({
    "messages": [
      {"role": "system", "content": "sys"},
      {"role": "user", "content": "hi é 你好"},
      {"role": "assistant", "content": "<think>\nr\n</think>\n\nok", "reasoning_content": "r",
       "tool_calls": [{"id": "call0001a", "type": "function", "function": {"name": "f", "arguments": {"a": [1, {"b": null}]}}}]},
      {"role": "tool", "tool_call_id": "call0001a", "content": "42"},
      {"role": "user", "content": ""}],
    "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
    "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>", "enable_thinking": false})");
}

RenderOptions SmallLimits() {
  RenderOptions o;
  o.max_output_bytes = 1 << 20;
  o.max_loop_iterations = 200000;
  o.max_recursion_depth = 32;
  o.now = [] { return std::time_t{0}; };
  return o;
}

// Renders and only checks that the call returns (ok or error).
void RenderAny(const std::string& src, const Json& ctx) {
  auto tpl = Template::Parse(src);
  if (!tpl.ok()) {
    EXPECT_FALSE(tpl.status().message().empty());
    return;
  }
  auto r = tpl->Render(ctx, SmallLimits());
  if (!r.ok()) {
    EXPECT_FALSE(r.status().message().empty());
  }
}

TEST(Robustness, MutatedRealTemplates) {
  const std::vector<std::string> files = {"qwen3.jinja", "qwen3_5.jinja", "deepseek_v3.jinja", "llama3_1.jinja",
                                          "gemma3.jinja", "mistral_nemo.jinja"};
  const std::vector<std::string> pieces = {"{%", "%}", "{{", "}}", "{#", "#}", "-", "(", ")", "[", "]", "'", "\"",
                                           "|", ".", ",", " if ", " for ", " endfor ", " endif ", "loop", "ns.",
                                           "**", "//", "\\", "\n", "é", "\xff", "}", "{", ":", "=", "~", "macro "};
  std::mt19937 rng(12345);
  const Json ctx = Context();
  int ok = 0, total = 0;
  for (const auto& f : files) {
    const std::string base = TemplateText(f);
    ASSERT_FALSE(base.empty()) << f;
    for (int iter = 0; iter < 60; ++iter) {
      std::string s = base;
      const int edits = 1 + static_cast<int>(rng() % 4);
      for (int e = 0; e < edits && !s.empty(); ++e) {
        const size_t pos = rng() % s.size();
        switch (rng() % 3) {
          case 0: s.erase(pos, 1 + rng() % 8); break;
          case 1: s.insert(pos, pieces[rng() % pieces.size()]); break;
          default: s[pos] = static_cast<char>(rng() % 256); break;
        }
      }
      auto tpl = Template::Parse(s);
      ++total;
      if (tpl.ok() && tpl->Render(ctx, SmallLimits()).ok()) ++ok;
    }
  }
  // Some mutations are harmless; most break the template. Either way, no crash.
  EXPECT_GT(total, 0);
  std::printf("mutated templates: %d rendered, %d rejected\n", ok, total - ok);
}

TEST(Robustness, DeeplyNestedJsonIsRefused) {
  // (Parsed straight into place: copying such a JSON value would itself
  // recurse deeply inside nlohmann::json.)
  const std::string nest = std::string(20000, '[') + std::string(20000, ']');
  const Json ctx = Json::parse("{\"x\": " + nest + "}");
  auto tpl = Template::Parse("{{ x|length }}{{ messages|length }}");
  ASSERT_TRUE(tpl.ok());
  auto r = tpl->Render(ctx);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("nested deeper than 512"), std::string::npos) << r.status().message();
  ChatRenderInput in;
  in.messages = Json::parse("[{\"role\": \"user\", \"content\": " + nest + "}]");
  auto chat = RenderChat(*tpl, in);
  ASSERT_FALSE(chat.ok());
  EXPECT_NE(chat.status().message().find("nested deeper than 512"), std::string::npos) << chat.status().message();
}

TEST(Robustness, RandomTokenSoup) {
  const std::vector<std::string> toks = {"{{", "}}", "{%", "%}", "{%-", "-%}", "if", "elif", "else", "endif", "for",
                                         "in", "endfor", "set", "=", "x", "messages", "loop", "m", ".", "[", "]", "(",
                                         ")", "|", "length", "tojson", "is", "not", "defined", "1", "'a'", "+", "~",
                                         ",", ":", "{", "}", "macro", "endmacro", "call", "endcall", "caller", "ns",
                                         "namespace", "break", "continue", "recursive", "raw", "endraw", " ", "\n"};
  std::mt19937 rng(777);
  const Json ctx = Context();
  for (int iter = 0; iter < 1500; ++iter) {
    std::string s;
    const int n = 1 + static_cast<int>(rng() % 30);
    for (int i = 0; i < n; ++i) s += toks[rng() % toks.size()] + (rng() % 2 ? " " : "");
    RenderAny(s, ctx);
  }
}

// Reference cycles made by a template are broken when the render ends (the
// sanitizer build checks for leaks).
TEST(Robustness, CyclesDoNotLeak) {
  RenderOptions o = SmallLimits();
  o.allow_mutation = true;
  const std::vector<std::string> cyclic = {
      "{% set ns = namespace() %}{% set ns.me = ns %}{{ ns.me.me is defined }}",
      "{% for i in [1] %}{% set ns = namespace() %}{% macro m() %}{{ ns }}{% endmacro %}{% set ns.m = m %}{% endfor %}x",
      "{% set l = [] %}{% set _ = l.append(l) %}{{ l|length }}{{ l }}",
      "{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}",
      "{% set d = {} %}{% set _ = d.update({'d': d}) %}{{ d|length }}",
  };
  for (const auto& s : cyclic) {
    auto tpl = Template::Parse(s);
    ASSERT_TRUE(tpl.ok()) << tpl.status().message();
    auto r = tpl->Render(Json::object(), o);
    EXPECT_TRUE(r.ok()) << s << ": " << r.status().message();
  }
}

TEST(Robustness, HostileTemplatesEndWithErrors) {
  const Json ctx = Context();
  const std::vector<std::string> hostile = {
      "{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}",
      "{% macro f() %}{% call f() %}{% endcall %}{% endmacro %}{{ f() }}",
      "{% macro f(n) %}{{ f(n) }}{{ f(n) }}{% endmacro %}{{ f(1) }}",
      "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}",
      "{% set ns = namespace(s='ab') %}{% for i in range(100) %}{% set ns.s = ns.s + ns.s %}{% endfor %}",
      "{{ 'x' * 1000000000 }}",
      "{{ [0] * 1000000000 }}",
      "{{ range(99999)|list * 99999 }}",
      "{% for i in range(99999) %}{{ range(99999)|join }}{% endfor %}",
      "{% for i in messages recursive %}{{ loop(messages) }}{% endfor %}",
      "{{ '%9999999d' % 1 }}",
      "{{ '{:99999999}'.format(1) }}",
      "{{ 'x'.center(1000000000) }}",
      "{{ 2 ** 100 }}",
      "{{ 10 ** 18 * 10 }}",
      "{{ -9223372036854775807 - 2 }}",
      "{% set x = caller() %}",
      "{{ loop.cycle() }}",
      "{% for x in messages %}{{ loop.cycle() }}{% endfor %}",
      "{{ namespace(a=1)|tojson }}",
      "{% set ns = namespace(x=[]) %}{% for i in range(5000) %}{% set ns.x = [ns.x] %}{% endfor %}{{ ns.x }}",
      "{% set ns = namespace(x={}) %}{% for i in range(5000) %}{% set ns.x = {'a': ns.x} %}{% endfor %}",
      "{{ strftime_now('%Y' * 1000) }}",
      "{{ (messages|first).content[::0] }}",
      "{% set d = {} %}{{ d|dictsort(by='nothing') }}",
  };
  for (const auto& s : hostile) {
    const auto start = std::chrono::steady_clock::now();
    auto tpl = Template::Parse(s);
    ASSERT_TRUE(tpl.ok()) << s << ": " << tpl.status().message();
    auto r = tpl->Render(ctx, SmallLimits());
    EXPECT_FALSE(r.ok()) << s;
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(secs, 20.0) << s;
  }
}

}  // namespace
}  // namespace tern::jinja
