// Goldens from Python Jinja2 configured as transformers does
// (tools/template/gen_goldens.py): tern must render byte-identical output, or
// fail where Jinja2 fails (with the same message for raise_exception).
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/mapped_file.h"
#include "template/chat.h"
#include "template/template.h"

namespace tern::jinja {
namespace {

using Json = nlohmann::ordered_json;

std::string GoldenDir() {
  const char* src = std::getenv("TERN_SOURCE_DIR");
  return std::string(src ? src : ".") + "/tests/golden/template/";
}

Json LoadJson(const std::string& name) {
  auto text = ReadFileToString(GoldenDir() + name);
  if (!text.ok()) {
    ADD_FAILURE() << text.status().message();
    return Json();
  }
  return Json::parse(*text);
}

RenderOptions FixedClock(const Json& golden) {
  RenderOptions o;
  const std::time_t t = golden["clock_epoch_utc"].get<int64_t>();
  o.now = [t] { return t; };
  o.local_time = false;
  return o;
}

// Compares one result against its golden record; returns "" when they agree.
std::string Check(const Json& golden, const Result<std::string>& got) {
  if (golden.contains("output")) {
    if (!got.ok()) return "expected output, got error: " + got.status().message();
    if (*got != golden["output"].get<std::string>()) {
      return "output differs:\n  want: " + golden["output"].dump() + "\n  got:  " + Json(*got).dump();
    }
    return "";
  }
  if (got.ok()) return "expected error (" + golden["error"].get<std::string>() + "), got output " + Json(*got).dump();
  if (golden["raised"].get<bool>() && got.status().message() != golden["error"].get<std::string>()) {
    return "raise_exception message differs: want " + golden["error"].dump() + ", got " +
           Json(got.status().message()).dump();
  }
  return "";
}

TEST(TemplateGolden, RealTemplatesAllScenarios) {
  const Json golden = LoadJson("chat_cases.json");
  ASSERT_TRUE(golden.is_object());
  const RenderOptions opts = FixedClock(golden);
  std::map<std::string, Template> templates;
  for (const auto& [name, info] : golden["templates"].items()) {
    auto src = ReadFileToString(GoldenDir() + "templates/" + info["file"].get<std::string>());
    ASSERT_TRUE(src.ok()) << src.status().message();
    auto tpl = Template::Parse(*src);
    ASSERT_TRUE(tpl.ok()) << name << ": " << tpl.status().message();
    templates.emplace(name, std::move(*tpl));
  }
  std::map<std::string, Json> scenarios;
  for (const auto& sc : golden["scenarios"]) scenarios[sc["name"].get<std::string>()] = sc;
  int checked = 0, failed = 0;
  for (const auto& r : golden["results"]) {
    const std::string tname = r["template"].get<std::string>();
    const Json& sc = scenarios.at(r["scenario"].get<std::string>());
    const Json& info = golden["templates"][tname];
    ChatRenderInput in;
    in.messages = sc["messages"];
    in.tools = sc.value("tools", Json());
    in.add_generation_prompt = sc.value("add_generation_prompt", true);
    in.extra_kwargs = sc.value("kwargs", Json::object());
    in.bos_token = info["bos_token"].get<std::string>();
    in.eos_token = info["eos_token"].get<std::string>();
    in.keep_null_content = sc.value("keep_null_content", false);
    const std::string diff = Check(r, RenderChat(templates.at(tname), in, opts));
    ++checked;
    if (!diff.empty()) {
      ++failed;
      ADD_FAILURE() << tname << " / " << sc["name"].get<std::string>() << ": " << diff;
    }
  }
  EXPECT_GE(checked, 8 * 10);
  std::printf("chat goldens: %d checked, %d failed\n", checked, failed);
}

void RunCases(const std::string& file, int min_cases) {
  const Json golden = LoadJson(file);
  ASSERT_TRUE(golden.is_object());
  const RenderOptions opts = FixedClock(golden);
  int checked = 0, failed = 0;
  for (const auto& c : golden["cases"]) {
    auto tpl = Template::Parse(c["template"].get<std::string>());
    Result<std::string> got = tpl.ok() ? tpl->Render(c["context"], opts) : Result<std::string>(tpl.status());
    const std::string diff = Check(c, got);
    ++checked;
    if (!diff.empty()) {
      ++failed;
      ADD_FAILURE() << c["name"].get<std::string>() << ": " << c["template"].dump() << "\n" << diff;
    }
  }
  EXPECT_GE(checked, min_cases);
  std::printf("%s: %d checked, %d failed\n", file.c_str(), checked, failed);
}

// The model templates of @huggingface/jinja's end-to-end test, each with its
// own example context (rendered directly) and ten chat scenarios (through
// RenderChat, scenarios from chat_cases.json).
TEST(TemplateGolden, MoreModelTemplates) {
  const Json golden = LoadJson("hf_js_cases.json");
  const Json chat = LoadJson("chat_cases.json");
  ASSERT_TRUE(golden.is_object() && chat.is_object());
  const RenderOptions opts = FixedClock(golden);
  std::map<std::string, Json> scenarios;
  for (const auto& sc : chat["scenarios"]) scenarios[sc["name"].get<std::string>()] = sc;
  std::map<std::string, Result<Template>> templates;
  int checked = 0, failed = 0;
  for (const auto& c : golden["cases"]) {
    const std::string file = c["file"].get<std::string>();
    if (!templates.count(file)) {
      auto src = ReadFileToString(GoldenDir() + "templates/" + file);
      ASSERT_TRUE(src.ok()) << src.status().message();
      templates.emplace(file, Template::Parse(*src));
    }
    const Result<Template>& tpl = templates.at(file);
    Result<std::string> got = Status::Error("not rendered");
    if (!tpl.ok()) {
      got = tpl.status();
    } else if (!c.contains("scenario")) {
      got = tpl->Render(c["context"], opts);
    } else {
      const Json& sc = scenarios.at(c["scenario"].get<std::string>());
      ChatRenderInput in;
      in.messages = sc["messages"];
      in.tools = sc.value("tools", Json());
      in.add_generation_prompt = sc.value("add_generation_prompt", true);
      in.extra_kwargs = sc.value("kwargs", Json::object());
      in.bos_token = c["bos_token"].get<std::string>();
      in.eos_token = c["eos_token"].get<std::string>();
      got = RenderChat(*tpl, in, opts);
    }
    const std::string diff = Check(c, got);
    ++checked;
    if (!diff.empty()) {
      ++failed;
      ADD_FAILURE() << file << " / " << c.value("scenario", "own context") << ": " << diff;
    }
  }
  EXPECT_GE(checked, 45 * 11);
  std::printf("hf_js goldens: %d checked, %d failed\n", checked, failed);
}

TEST(TemplateGolden, LanguageSnippets) { RunCases("snippets.json", 150); }

TEST(TemplateGolden, RandomTemplatesAgreeWithJinja2) { RunCases("fuzz.json", 1000); }

}  // namespace
}  // namespace tern::jinja
