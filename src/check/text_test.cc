// URL parsing, lenient JSON reading, SSE splitting.
#include <gtest/gtest.h>

#include <cmath>

#include "check/json_text.h"
#include "check/sse.h"
#include "check/url.h"

namespace tern::check {
namespace {

TEST(ParseBaseUrl, Forms) {
  auto u = ParseBaseUrl("http://127.0.0.1:30000");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->scheme, "http");
  EXPECT_EQ(u->host, "127.0.0.1");
  EXPECT_EQ(u->port, 30000);
  EXPECT_EQ(u->base_path, "");
  EXPECT_EQ(u->Origin(), "http://127.0.0.1:30000");

  u = ParseBaseUrl("localhost:8080/v1/");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->scheme, "http");
  EXPECT_EQ(u->port, 8080);
  EXPECT_EQ(u->base_path, "");
  EXPECT_TRUE(u->stripped_v1);

  u = ParseBaseUrl("HTTPS://example.com/proxy/llm");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->scheme, "https");
  EXPECT_EQ(u->port, 443);
  EXPECT_EQ(u->base_path, "/proxy/llm");
  EXPECT_EQ(u->ToString(), "https://example.com:443/proxy/llm");

  u = ParseBaseUrl("http://[::1]:9000");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->host, "::1");
  EXPECT_EQ(u->Origin(), "http://[::1]:9000");
}

TEST(ParseBaseUrl, ErrorsSayWhat) {
  EXPECT_NE(ParseBaseUrl("ftp://x").status().message().find("unsupported scheme 'ftp'"), std::string::npos);
  EXPECT_NE(ParseBaseUrl("http://x:99999").status().message().find("bad port"), std::string::npos);
  EXPECT_NE(ParseBaseUrl("http://x:12ab").status().message().find("bad port"), std::string::npos);
  EXPECT_NE(ParseBaseUrl("http://x/?a=1").status().message().find("queries"), std::string::npos);
  EXPECT_NE(ParseBaseUrl("http://user:pw@x").status().message().find("--api-key"), std::string::npos);
  EXPECT_FALSE(ParseBaseUrl("").ok());
  EXPECT_FALSE(ParseBaseUrl("http://:80").ok());
  EXPECT_FALSE(ParseBaseUrl("http://[::1").ok());
}

TEST(SanitizeJson, NonFiniteWordsBecomeNull) {
  auto s = SanitizeJson(R"({"a":NaN,"b":-Infinity,"c":[Infinity, nan, -inf],"d":"NaN in a string","null":null})");
  EXPECT_EQ(s.nonfinite, 5);
  EXPECT_EQ(s.text, R"({"a":null,"b":null,"c":[null, null, null],"d":"NaN in a string","null":null})");
  auto j = ParseJsonLenient(R"({"logprob": NaN})");
  ASSERT_TRUE(j.has_value());
  EXPECT_TRUE((*j)["logprob"].is_null());
}

TEST(SanitizeJson, InvalidUtf8AndLoneSurrogates) {
  // \xFF is never valid; \xC3 without its continuation byte is cut off.
  std::string raw =
      "{\"t\":\"a\xFF"
      "b\xC3\"}";
  SanitizedJson info;
  auto j = ParseJsonLenient(raw, &info);
  ASSERT_TRUE(j.has_value());
  EXPECT_EQ(info.invalid_utf8, 2);
  EXPECT_EQ((*j)["t"].get<std::string>(),
            "a\xEF\xBF\xBD"
            "b\xEF\xBF\xBD");
  // A lone high surrogate escape; a proper pair (U+1F600) is kept.
  j = ParseJsonLenient(R"({"t":"x\ud800y","u":"\ud83d\ude00"})", &info);
  ASSERT_TRUE(j.has_value());
  EXPECT_EQ(info.invalid_utf8, 1);
  EXPECT_EQ((*j)["t"].get<std::string>(), "x\xEF\xBF\xBDy");
  EXPECT_EQ((*j)["u"].get<std::string>(), "\xF0\x9F\x98\x80");
  // Valid multi-byte text is untouched; overlong encodings are not valid.
  std::string out;
  EXPECT_EQ(RepairUtf8("h\xC3\xA9llo \xE2\x82\xAC", &out), 0);
  out.clear();
  EXPECT_EQ(RepairUtf8("\xC0\xAF", &out), 1);  // overlong "/": one broken sequence
  EXPECT_EQ(out, "\xEF\xBF\xBD");
}

TEST(SanitizeJson, NotJsonStaysNotJson) {
  EXPECT_FALSE(ParseJsonLenient("<html>502 Bad Gateway</html>").has_value());
  EXPECT_FALSE(ParseJsonLenient("").has_value());
}

// A reply nesting past any real one is refused before parsing: dumping or
// copying it recursed once per level, and 10^6 levels overflowed the stack.
TEST(SanitizeJson, DeepNestingIsNotTaken) {
  const int n = 1000000;
  EXPECT_FALSE(ParseJsonLenient("{\"detail\":" + std::string(n, '[') + std::string(n, ']') + "}").has_value());
  const std::string ok = std::string(kMaxReplyNesting - 1, '[') + std::string(kMaxReplyNesting - 1, ']');
  ASSERT_TRUE(ParseJsonLenient("{\"a\":" + ok + "}").has_value());
  EXPECT_FALSE(ParseJsonLenient("{\"a\":[" + ok + "]}").has_value());
  EXPECT_TRUE(ParseJsonLenient(R"({"text": ")" + std::string(n, '[') + R"("})").has_value()) << "brackets in a string";
}

TEST(JsonAccessors, WrongTypesAreNullopt) {
  auto j = nlohmann::json::parse(R"({"s":"x","i":3,"f":2.0,"g":2.5,"n":null})");
  EXPECT_EQ(JsonString(j, "s"), "x");
  EXPECT_FALSE(JsonString(j, "i").has_value());
  EXPECT_EQ(JsonInt(j, "i"), 3);
  EXPECT_EQ(JsonInt(j, "f"), 2);
  EXPECT_FALSE(JsonInt(j, "g").has_value());
  EXPECT_FALSE(JsonInt(j, "missing").has_value());
  EXPECT_TRUE(JsonField(nlohmann::json::array(), "x").is_null());
}

TEST(Excerpt, CutsAtCharacterBoundaries) {
  EXPECT_EQ(Excerpt("a\nb", 10), "a\\nb");
  // Control bytes from a server are shown, never sent to the terminal (ESC[1A redrew a row).
  EXPECT_EQ(Excerpt("x\x1b[1A\x7f", 20), "x\\x1b[1A\\x7f");
  EXPECT_EQ(Excerpt("a\xC2\x9B" "1A\xC3\xA9", 20), "a\\u009b1A\xC3\xA9");  // C1 CSI as UTF-8; é stays
  EXPECT_EQ(Excerpt("abcdef", 3), "abc...");
  // "é" is two bytes; a cut after the first must not leave half of it.
  EXPECT_EQ(Excerpt("ab\xC3\xA9zz", 3), "ab...");
}

std::vector<SseEvent> FeedAll(SseParser& p, std::string_view bytes, size_t piece) {
  std::vector<SseEvent> all, some;
  for (size_t i = 0; i < bytes.size(); i += piece) {
    some.clear();
    p.Feed(bytes.substr(i, piece), &some);
    all.insert(all.end(), some.begin(), some.end());
  }
  return all;
}

TEST(SseParser, SplitsEventsWhateverTheChunking) {
  const std::string body = "data: {\"a\":1}\n\n: keep-alive\n\nevent: error\ndata: x\ndata:y\n\r\ndata: [DONE]\r\n\r\n";
  for (size_t piece : {1u, 2u, 3u, 7u, 1000u}) {
    SseParser p;
    auto ev = FeedAll(p, body, piece);
    ASSERT_EQ(ev.size(), 3u) << "piece " << piece;
    EXPECT_EQ(ev[0].data, "{\"a\":1}");
    EXPECT_EQ(ev[1].event, "error");
    EXPECT_EQ(ev[1].data, "x\ny");
    EXPECT_EQ(ev[2].data, "[DONE]");
    EXPECT_FALSE(p.HasPartial());
  }
}

TEST(SseParser, CrOnlyLineEndsAndPartialTail) {
  SseParser p;
  std::vector<SseEvent> ev;
  p.Feed("data: one\r\rdata: tw", &ev);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].data, "one");
  EXPECT_TRUE(p.HasPartial());
  EXPECT_EQ(p.partial(), "data: tw");
  ev.clear();
  p.Feed("o\n", &ev);  // line complete, event not yet
  EXPECT_TRUE(ev.empty());
  EXPECT_TRUE(p.HasPartial());
  p.Feed("\n", &ev);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].data, "two");
}

}  // namespace
}  // namespace tern::check
