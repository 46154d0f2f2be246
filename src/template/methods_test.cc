// Every method name tern lists for str, dict, list and tuple must be handled
// or fail with a render error: a listed name without an implementation once
// fell back from the call to attribute lookup, got a bound method, called it,
// and recursed until the stack overflowed (issue 16). Outputs of the methods
// themselves are checked against Jinja2 in the goldens (snippets.py: m_*).
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "template/chat.h"
#include "template/template.h"

namespace tern::jinja {
namespace {

using Json = nlohmann::ordered_json;

Result<std::string> RenderStr(std::string_view src, const RenderOptions& o = {}) {
  auto tpl = Template::Parse(src);
  if (!tpl.ok()) return tpl.status();
  return tpl->Render(Json::object(), o);
}

// Python's names for the methods of each type, implemented or not (the
// complete lists of `dir()` minus the dunder names), so that a name tern
// lists but does not implement cannot hide here.
const std::vector<std::string> kStrNames = {
    "capitalize", "casefold", "center", "count", "encode", "endswith", "expandtabs", "find", "format",
    "format_map", "index", "isalnum", "isalpha", "isascii", "isdecimal", "isdigit", "isidentifier",
    "islower", "isnumeric", "isprintable", "isspace", "istitle", "isupper", "join", "ljust", "lower",
    "lstrip", "maketrans", "partition", "removeprefix", "removesuffix", "replace", "rfind", "rindex",
    "rjust", "rpartition", "rsplit", "rstrip", "split", "splitlines", "startswith", "strip", "swapcase",
    "title", "translate", "upper", "zfill"};
const std::vector<std::string> kDictNames = {"clear", "copy", "fromkeys", "get", "items", "keys",
                                             "pop", "popitem", "setdefault", "update", "values"};
const std::vector<std::string> kListNames = {"append", "clear", "copy", "count", "extend", "index",
                                             "insert", "pop", "remove", "reverse", "sort"};

// Each way a template can reach a method: a direct call, the bound method
// called later, item syntax, the attr filter; printing it uncalled.
std::vector<std::string> AccessForms(const std::string& obj, const std::string& name) {
  return {
      "{{ " + obj + "." + name + "() }}",
      "{{ " + obj + "." + name + "('a') }}",
      "{% set m = " + obj + "." + name + " %}{{ m() }}",
      "{{ " + obj + "['" + name + "']() }}",
      "{{ (" + obj + "|attr('" + name + "'))() }}",
      "{{ " + obj + "." + name + " }}",
  };
}

TEST(Methods, EveryListedNameReturnsOrFailsWithoutRecursing) {
  struct Case {
    std::string obj;
    const std::vector<std::string>* names;
  };
  const std::vector<Case> cases = {{"'a\\tb'", &kStrNames}, {"{'k': 1}", &kDictNames},
                                   {"[2, 1]", &kListNames}, {"(2, 1)", &kListNames}};
  for (bool mutation : {false, true}) {
    RenderOptions o;
    o.allow_mutation = mutation;
    for (const auto& c : cases) {
      for (const auto& name : *c.names) {
        for (const auto& src : AccessForms(c.obj, name)) {
          auto r = RenderStr(src, o);  // a recursion here is a stack overflow, not a failure
          if (!r.ok()) {
            const std::string& msg = r.status().message();
            EXPECT_EQ(msg.find("recursion"), std::string::npos) << src;
            EXPECT_FALSE(msg.empty()) << src;
            // The name tables and the implementations agree: only str.encode
            // (tern has no bytes) is listed without an implementation.
            if (!(c.names == &kStrNames && name == "encode")) {
              EXPECT_EQ(msg.find("is not supported"), std::string::npos) << src << ": " << msg;
            }
          }
        }
      }
    }
  }
}

TEST(Methods, UnimplementedMethodIsARenderError) {
  auto r = RenderStr("{{ 'abc'.encode('utf-8') }}");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "template error at line 1, column 16: str.encode is not supported");
  for (const char* src : {"{% set e = 'abc'.encode %}{{ e() }}", "{{ 'abc'['encode']() }}",
                          "{{ ('abc'|attr('encode'))() }}", "{{ '{}'.format('x'.encode) }}{{ 'x'.encode() }}"}) {
    r = RenderStr(src);
    ASSERT_FALSE(r.ok()) << src;
    EXPECT_NE(r.status().message().find("str.encode is not supported"), std::string::npos)
        << src << ": " << r.status().message();
  }
}

TEST(Methods, ImplementedWhereJinja2HasThem) {
  // Expected strings: Python 3.11 + Jinja2 3.1 ImmutableSandboxedEnvironment.
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{{ 'a\\tbc\\td'.expandtabs() }}|{{ 'ab\\tc'.expandtabs(tabsize=3) }}", "a       bc      d|ab c"},
      {"{{ '_x1'.isidentifier() }} {{ '1a'.isidentifier() }} {{ 'héllo'.isidentifier() }}", "True False True"},
      {"{{ 'a b'.isprintable() }} {{ 'a\\tb'.isprintable() }} {{ ''.isprintable() }}", "True False True"},
      {"{{ 'Hello World'.istitle() }} {{ 'Hello world'.istitle() }} {{ ''.istitle() }}", "True False False"},
      {"{{ '{a}-{b!r}'.format_map({'a': 1, 'b': 'x'}) }}", "1-'x'"},
      {"{{ {'z': 1}.fromkeys('ab') }} {{ {}.fromkeys(['x', 'y', 'x'], [1]) }}",
       "{'a': None, 'b': None} {'x': [1], 'y': [1]}"},
      {"{{ 'hello'.translate({104: 'J', 108: None, 111: 48}) }}", "Je0"},
      {"{{ 'abc'.translate('abc'.maketrans('ab', 'xy', 'c')) }}", "xy"},
      {"{{ (1, 2).index(2) }} {{ (1, 2, 2).count(2) }}", "1 2"},
  };
  for (const auto& [src, want] : cases) {
    auto r = RenderStr(src);
    ASSERT_TRUE(r.ok()) << src << ": " << r.status().message();
    EXPECT_EQ(*r, want) << src;
  }
  RenderOptions mut;
  mut.allow_mutation = true;
  auto r = RenderStr("{% set l = [3, 1, 2] %}{{ l.sort() }}{{ l }}{{ l.sort(reverse=true) }}{{ l }}", mut);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, "None[1, 2, 3]None[3, 2, 1]");
}

// A template that calls an unimplemented method for some messages only: the
// render of such a chat is an error status (the server answers 400), and the
// next render of the same template still works.
TEST(Methods, ChatThatReachesAnUnsupportedMethodIsAnErrorStatus) {
  auto tpl = Template::Parse(
      "{% for m in messages %}{% if m.role == 'user' %}{{ m.content.encode('utf-8') }}"
      "{% else %}{{ m.content }}{% endif %}{% endfor %}");
  ASSERT_TRUE(tpl.ok()) << tpl.status().message();
  ChatRenderInput in;
  in.messages = Json::parse(R"([{"role": "system", "content": "s"}])");
  auto ok = RenderChat(*tpl, in);
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(*ok, "s");
  in.messages = Json::parse(R"([{"role": "system", "content": "s"}, {"role": "user", "content": "u"}])");
  auto bad = RenderChat(*tpl, in);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("str.encode is not supported"), std::string::npos)
      << bad.status().message();
}

}  // namespace
}  // namespace tern::jinja
