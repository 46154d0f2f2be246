// RenderChat: message normalisation and the context it builds.
#include "template/chat.h"

#include <gtest/gtest.h>

namespace tern::jinja {
namespace {

using Json = nlohmann::ordered_json;

TEST(Chat, NormalizesNullAndMissingContent) {
  auto r = NormalizeMessages(Json::parse(R"([
    {"role": "assistant", "content": null, "tool_calls": [{"id": "1"}]},
    {"role": "assistant", "tool_calls": []},
    {"role": "user", "content": "x", "name": "bob"}])"),
                             false);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->dump(), R"([{"role":"assistant","content":"","tool_calls":[{"id":"1"}]},)"
                       R"({"role":"assistant","tool_calls":[],"content":""},{"role":"user","content":"x","name":"bob"}])");
  auto kept = NormalizeMessages(Json::parse(R"([{"role": "assistant", "content": null}])"), true);
  ASSERT_TRUE(kept.ok());
  EXPECT_TRUE((*kept)[0]["content"].is_null());
}

TEST(Chat, JoinsTextPartsKeepsOtherParts) {
  auto r = NormalizeMessages(Json::parse(R"([
    {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
    {"role": "user", "content": [{"type": "text", "text": "see"}, {"type": "image_url", "image_url": {"url": "u"}}]}])"),
                             false);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)[0]["content"], "a\nb");
  EXPECT_TRUE((*r)[1]["content"].is_array());
}

TEST(Chat, RejectsMalformedInput) {
  EXPECT_FALSE(NormalizeMessages(Json::object(), false).ok());
  EXPECT_FALSE(NormalizeMessages(Json::parse(R"(["not an object"])"), false).ok());
  auto tpl = Template::Parse("{{ messages|length }}");
  ASSERT_TRUE(tpl.ok());
  ChatRenderInput in;
  in.tools = "not a list";
  EXPECT_FALSE(RenderChat(*tpl, in).ok());
}

TEST(Chat, BuildsTheTransformersContext) {
  auto tpl = Template::Parse(
      "{{ bos_token }}|{{ eos_token }}|{{ add_generation_prompt }}|{{ tools is none }}|{{ documents is none }}|"
      "{{ enable_thinking }}|{% for m in messages %}{{ m.role }}={{ m.content }};{% endfor %}");
  ASSERT_TRUE(tpl.ok()) << tpl.status().message();
  ChatRenderInput in;
  in.messages = Json::parse(R"([{"role": "user", "content": [{"type": "text", "text": "hi"}]}])");
  in.bos_token = "<s>";
  in.eos_token = "</s>";
  in.add_generation_prompt = false;
  in.extra_kwargs = Json::parse(R"({"enable_thinking": false})");
  auto r = RenderChat(*tpl, in);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, "<s>|</s>|False|True|True|False|user=hi;");
}

TEST(Chat, KwargsOverrideDefaults) {
  auto tpl = Template::Parse("{{ add_generation_prompt }}");
  ASSERT_TRUE(tpl.ok());
  ChatRenderInput in;
  in.extra_kwargs = Json::parse(R"({"add_generation_prompt": "custom"})");
  auto r = RenderChat(*tpl, in);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "custom");
}

}  // namespace
}  // namespace tern::jinja
