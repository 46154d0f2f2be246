// Request log lines (request_log.h): both forms, the fields a sysadmin reads,
// text only when asked for, one request one line whatever the path holds.
#include "server/request_log.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace tern::server {
namespace {

using nlohmann::json;

struct Fixture {
  HttpRequest req{.method = "POST", .path = "/v1/chat/completions", .remote_addr = "10.1.2.3"};
  RequestRecord record;
  Fixture() {
    record.request_id = "chatcmpl-abc";
    record.prompt_tokens = 12;
    record.completion_tokens = 30;
    record.prompt_text = "secret prompt";
    record.completion_text = "secret answer";
    record.sampling_json = R"({"temperature":0.5,"n":1})";
  }
  std::string Line(const RequestLogOptions& o, int status = 200) const {
    // 2026-01-02T03:04:05.678Z
    const auto t = std::chrono::system_clock::time_point(std::chrono::milliseconds(1767323045678));
    return FormatRequestLog({.req = req, .status = status, .record = record, .latency_ms = 41.25, .time = t}, o);
  }
};

TEST(RequestLogTest, JsonLineHasTheFields) {
  Fixture f;
  const json j = json::parse(f.Line({.format = RequestLogFormat::kJson, .level = 0}));
  EXPECT_EQ(j["time"], "2026-01-02T03:04:05.678Z");
  EXPECT_EQ(j["event"], "request");
  EXPECT_EQ(j["method"], "POST");
  EXPECT_EQ(j["path"], "/v1/chat/completions");
  EXPECT_EQ(j["status"], 200);
  EXPECT_DOUBLE_EQ(j["latency_ms"].get<double>(), 41.3);
  EXPECT_EQ(j["request_id"], "chatcmpl-abc");
  EXPECT_EQ(j["remote_addr"], "10.1.2.3");
  EXPECT_EQ(j["prompt_tokens"], 12);
  EXPECT_EQ(j["completion_tokens"], 30);
  EXPECT_FALSE(j.contains("sampling"));
  EXPECT_FALSE(j.contains("prompt"));
  EXPECT_FALSE(j.contains("client_gone"));
}

TEST(RequestLogTest, NotAGenerationHasNoTokenFields) {
  Fixture f;
  f.record.prompt_tokens = -1;
  const json j = json::parse(f.Line({.format = RequestLogFormat::kJson}, 404));
  EXPECT_EQ(j["status"], 404);
  EXPECT_FALSE(j.contains("prompt_tokens"));
  EXPECT_FALSE(j.contains("completion_tokens"));
  EXPECT_EQ(f.Line({}, 404).find("prompt_tokens"), std::string::npos);
}

TEST(RequestLogTest, TextOnlyWithLogRequestsAtLevel2OrMore) {
  Fixture f;
  for (int level = 0; level <= 3; ++level)
    for (RequestLogFormat format : {RequestLogFormat::kText, RequestLogFormat::kJson}) {
      const std::string line = f.Line({.format = format, .log_requests = false, .level = level});
      EXPECT_EQ(line.find("secret"), std::string::npos) << line;
    }
  EXPECT_EQ(f.Line({.log_requests = false, .level = 3}).find("temperature"), std::string::npos);
  EXPECT_EQ(f.Line({.log_requests = true, .level = 1}).find("secret"), std::string::npos);
  EXPECT_NE(f.Line({.log_requests = true, .level = 1}).find("sampling={\"temperature\":0.5"), std::string::npos);
  const json two = json::parse(f.Line({.format = RequestLogFormat::kJson, .log_requests = true, .level = 2}));
  EXPECT_EQ(two["prompt"], "secret prompt");
  EXPECT_EQ(two["completion"], "secret answer");
  EXPECT_EQ(two["sampling"]["temperature"], 0.5);
  const std::string text = f.Line({.log_requests = true, .level = 3});
  EXPECT_NE(text.find("prompt=\"secret prompt\""), std::string::npos) << text;
}

TEST(RequestLogTest, PartialTextIsCutOnACharacterBoundary) {
  Fixture f;
  f.record.completion_text =
      std::string(kPartialTextChars - 1, 'a') + "\xc3\xa9" + std::string(100, 'b');  // é straddles
  const json j = json::parse(f.Line({.format = RequestLogFormat::kJson, .log_requests = true, .level = 2}));
  EXPECT_EQ(j["completion"].get<std::string>(), std::string(kPartialTextChars - 1, 'a'));
  const json all = json::parse(f.Line({.format = RequestLogFormat::kJson, .log_requests = true, .level = 3}));
  EXPECT_EQ(all["completion"].get<std::string>().size(), kPartialTextChars + 101);
}

TEST(RequestLogTest, TextLineIsOneLineWhateverThePathHolds) {
  Fixture f;
  f.req.path = "/x\nFAKE 200 line\"";  // a decoded %0A from a client
  const std::string line = f.Line({});
  EXPECT_EQ(line.find('\n'), std::string::npos) << line;
  EXPECT_EQ(line.rfind("POST \"/x\\x0aFAKE 200 line\\\"\" 200 41.2 ms id=chatcmpl-abc", 0), 0u) << line;
  EXPECT_NE(line.find("prompt_tokens=12 completion_tokens=30"), std::string::npos);
  EXPECT_NE(line.find("remote=10.1.2.3"), std::string::npos);
  const std::string json_line = f.Line({.format = RequestLogFormat::kJson});
  EXPECT_EQ(json_line.find('\n'), std::string::npos);
  EXPECT_EQ(json::parse(json_line)["path"], f.req.path);
}

TEST(RequestLogTest, ResponseIdBesideTheClientsRequestId) {
  Fixture f;
  f.record.request_id = "gw-7";
  f.record.response_id = "chatcmpl-abc";
  const json j = json::parse(f.Line({.format = RequestLogFormat::kJson}));
  EXPECT_EQ(j["request_id"], "gw-7");
  EXPECT_EQ(j["response_id"], "chatcmpl-abc");
  EXPECT_NE(f.Line({}).find("id=gw-7 response_id=chatcmpl-abc "), std::string::npos) << f.Line({});
}

TEST(RequestLogTest, ClientGoneIsReported) {
  Fixture f;
  f.record.client_gone = true;
  EXPECT_EQ(json::parse(f.Line({.format = RequestLogFormat::kJson}))["client_gone"], true);
  EXPECT_NE(f.Line({}).find(" client_gone"), std::string::npos);
}

TEST(RequestLogTest, UsableRequestIdRefusesWhatCouldForgeALine) {
  EXPECT_EQ(UsableRequestId("3f2a-9b/c+d=="), "3f2a-9b/c+d==");
  EXPECT_EQ(UsableRequestId(""), "");
  EXPECT_EQ(UsableRequestId("a b"), "");
  EXPECT_EQ(UsableRequestId("a\nb"), "");
  EXPECT_EQ(UsableRequestId("a\"b"), "");
  EXPECT_EQ(UsableRequestId("caf\xc3\xa9"), "");
  EXPECT_EQ(UsableRequestId(std::string(129, 'x')), "");
  EXPECT_EQ(UsableRequestId(std::string(128, 'x')), std::string(128, 'x'));
}

TEST(RequestLogTest, FormatsAndProbes) {
  EXPECT_EQ(ParseRequestLogFormat("json"), RequestLogFormat::kJson);
  EXPECT_EQ(ParseRequestLogFormat("text"), RequestLogFormat::kText);
  EXPECT_FALSE(ParseRequestLogFormat("yaml"));
  EXPECT_TRUE(IsProbePath("/health"));
  EXPECT_TRUE(IsProbePath("/health_generate"));
  EXPECT_TRUE(IsProbePath("/metrics"));
  EXPECT_FALSE(IsProbePath("/v1/models"));
}

}  // namespace
}  // namespace tern::server
