#include "api/json_parse.h"

#include <string>

#include <gtest/gtest.h>

#include "api/chat_template_inputs.h"
#include "api/requests.h"

namespace tern::api {
namespace {

Json ParseOrdered(const std::string& s) { return Json::parse(s); }

Json ParseLinear(const std::string& s) {
  Json j;
  EXPECT_TRUE(ParseJsonLinear(s, &j)) << s;
  return j;
}

TEST(JsonParseLinear, SameValueAsNlohmann) {
  for (const std::string s : {
           R"({"b": 1, "a": [1, 2.5, -3, 18446744073709551615, "x", null, true, false, {}], "c": {"z": {}, "y": []}})",
           R"([])", R"("text")", R"(12)", R"(null)", R"({"": ""})",
           R"([{"k": 1}, {"k": 2, "j": [[[]]]}])",
       }) {
    const Json want = ParseOrdered(s), got = ParseLinear(s);
    EXPECT_EQ(got, want) << s;
    EXPECT_EQ(got.dump(), want.dump()) << s;  // key order too
  }
}

TEST(JsonParseLinear, KeyOrderKept) {
  const Json j = ParseLinear(R"({"zeta": 1, "alpha": 2, "mid": {"q": 1, "b": 2}})");
  EXPECT_EQ(j.dump(), R"({"zeta":1,"alpha":2,"mid":{"q":1,"b":2}})");
}

// nlohmann::ordered_json: a repeated key keeps its first place and takes the last value.
TEST(JsonParseLinear, DuplicateKeysAsNlohmann) {
  std::string small = R"({"a": 1, "b": 2, "a": 3, "c": {"x": 1, "x": [2]}})";
  EXPECT_EQ(ParseLinear(small).dump(), ParseOrdered(small).dump());
  EXPECT_EQ(ParseLinear(small).dump(), R"({"a":3,"b":2,"c":{"x":[2]}})");
  // Past the pairwise check: the hashed path.
  std::string big = "{";
  for (int i = 0; i < 100; ++i) big += "\"k" + std::to_string(i % 37) + "\": " + std::to_string(i) + ",";
  big += "\"last\": 0}";
  EXPECT_EQ(ParseLinear(big).dump(), ParseOrdered(big).dump());
  EXPECT_EQ(ParseLinear(big).size(), 38u);
}

TEST(JsonParseLinear, SyntaxErrorReportsByte) {
  Json j;
  size_t byte = 0;
  std::string msg;
  EXPECT_FALSE(ParseJsonLinear(R"({"a": [1, 2)", &j, &byte, &msg));
  size_t want = 0;
  try {
    const Json unused = Json::parse(R"({"a": [1, 2)");  // throws
    (void)unused;
  } catch (const Json::parse_error& e) {
    want = e.byte;
  }
  EXPECT_EQ(byte, want);
  EXPECT_FALSE(msg.empty());
  EXPECT_TRUE(j.is_null());
}

TEST(JsonParseLinear, ManyKeysAreParsedWhole) {
  std::string body = "{";
  for (int i = 0; i < 200000; ++i) body += (i ? ",\"" : "\"") + std::to_string(i) + "\":1";
  body += "}";
  const Json j = ParseLinear(body);
  ASSERT_EQ(j.size(), 200000u);
  EXPECT_EQ(j.begin().key(), "0");
  EXPECT_EQ(std::prev(j.end()).key(), "199999");
}

TEST(JsonHelpers, MergeObjectOverwritesInPlaceAndAppends) {
  Json dst = Json::parse(R"({"a": 1, "b": 2})");
  MergeObject(dst, Json::parse(R"({"b": 20, "c": 30})"));
  EXPECT_EQ(dst.dump(), R"({"a":1,"b":20,"c":30})");
  Json none;
  MergeObject(none, Json::parse(R"({"x": 1})"));
  EXPECT_EQ(none.dump(), R"({"x":1})");
}

TEST(JsonHelpers, ChatTemplateInputsKeepMessageKeysAndKwargs) {
  auto body = ParseJsonBody(R"({"messages": [{"role": "user", "content": null, "name": "n"}],
                               "chat_template_kwargs": {"enable_thinking": false, "z": 1}})");
  ASSERT_TRUE(body.ok());
  auto req = ParseChatRequest(*body);
  ASSERT_TRUE(req.ok()) << req.error().message;
  const ChatTemplateInputs in = PrepareChatTemplateInputs(*req, ContentFormat::kString);
  EXPECT_EQ(in.messages[0].dump(), R"({"role":"user","content":"","name":"n"})");
  EXPECT_EQ(in.kwargs["z"], 1);
  EXPECT_EQ(in.kwargs["enable_thinking"], false);
}

}  // namespace
}  // namespace tern::api
