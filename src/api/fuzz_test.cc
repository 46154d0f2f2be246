// Random junk: parsers and request validation never crash, and the streaming
// parsers give the same result whatever the split, on arbitrary input built
// from tag fragments, JSON punctuation and random bytes.
#include <iterator>
#include <random>

#include <gtest/gtest.h>

#include "api/chat_output.h"
#include "api/chat_output_testing.h"
#include "api/chat_template_inputs.h"
#include "api/error_json.h"
#include "api/json_stream.h"
#include "api/py_literal.h"
#include "api/requests.h"
#include "api/sampling.h"

namespace tern::api {
namespace {

const char* const kFragments[] = {
    "<think>", "</think>", "<tool_call>", "</tool_call>", "<function=", "</function>", "<parameter=",
    "</parameter>", "get_time", "timezone", "days", ">", "<", "/", "{", "}", "[", "]", ":", ",", "\"",
    "\\", "\"name\"", "\"arguments\"", "\"get_time\"", "\"timezone\"", "null", "true", "1", "-2.5e3",
    "\n", " ", "x", "é", "東", "<th", "</t", "<tool", "\\u00e9", "\\ud83d", "'", "None", "(", ")"};

std::string RandomText(std::mt19937& rng, int max_parts) {
  std::uniform_int_distribution<int> parts(0, max_parts);
  std::uniform_int_distribution<size_t> pick(0, std::size(kFragments));
  std::string s;
  for (int n = parts(rng); n > 0; --n) {
    const size_t k = pick(rng);
    if (k == std::size(kFragments)) s.push_back(static_cast<char>(rng() & 0xFF));  // any byte
    else s += kFragments[k];
  }
  return s;
}

ChatParseConfig Config(ToolParserKind kind, bool force) {
  ChatParseConfig c;
  ReasoningConfig r;
  r.kind = ReasoningParserKind::kQwen3;
  r.force_reasoning = force;
  c.reasoning = r;
  c.tool_parser = kind;
  ToolSpec t;
  t.name = "get_time";
  t.parameters = Json::parse(R"({"properties": {"timezone": {"type": "string"}, "days": {"type": "integer"}}})");
  c.tools = {t};
  return c;
}

TEST(Fuzz, StreamingParsersAreSplitInvariant) {
  std::mt19937 rng(20240611);
  for (int iter = 0; iter < 1500; ++iter) {
    const std::string text = RandomText(rng, 24);
    const ToolParserKind kind = iter % 3 == 0 ? ToolParserKind::kQwen3Coder
                                : iter % 3 == 1 ? ToolParserKind::kHermes
                                                : ToolParserKind::kQwen25;
    const ChatParseConfig config = Config(kind, iter % 2 == 0);
    const std::string whole = SummarizeChatOutput(config, std::vector<std::string>{text});
    std::vector<std::string> pieces;
    size_t i = 0;
    while (i < text.size()) {
      const size_t len = 1 + rng() % 6;
      pieces.push_back(text.substr(i, len));
      i += len;
    }
    ASSERT_EQ(SummarizeChatOutput(config, pieces), whole) << "input: " << text;
  }
}

TEST(Fuzz, JsonWriterAndLiteralsSurviveJunk) {
  std::mt19937 rng(7);
  for (int iter = 0; iter < 2000; ++iter) {
    const std::string text = RandomText(rng, 16);
    JsonStreamWriter w;
    for (const char c : text)
      if (!w.Push(c)) break;
    w.Finish();
    bool valid_utf8 = true;  // the writer copies bytes; invalid UTF-8 stays invalid
    try {
      (void)Json(text).dump();
    } catch (const std::exception&) {
      valid_utf8 = false;
    }
    if (valid_utf8 && w.done() && !w.failed()) {
      // What it accepted is JSON that parses back to itself.
      const Json v = Json::parse(w.out(), nullptr, false);
      EXPECT_FALSE(v.is_discarded()) << text << " -> " << w.out();
    }
    (void)PyLiteralEval(text);
    (void)PyIntText(text);
    (void)PyFloatText(text);
    (void)ConvertXmlParameter(text, "days", Json::parse(R"({"days": {"type": "object"}})"));
  }
}

TEST(Fuzz, RequestParsersSurviveJunk) {
  std::mt19937 rng(99);
  const std::vector<std::string> values = {
      "null", "true", "0", "-1", "1e308", "\"\"", "\"x\"", "[]", "{}", "[1, \"a\"]", "{\"a\": null}",
      "[{\"role\": \"user\"}]", "[{\"role\": \"user\", \"content\": [{\"type\": \"image_url\"}]}]",
      "{\"type\": \"function\", \"function\": {\"name\": 1}}", "[{\"function\": {\"name\": \"f\", \"parameters\": []}}]",
      "9223372036854775808", "-9223372036854775809", "1.5", "\"\\u0000\""};
  const std::vector<std::string> keys = {
      "messages", "model", "tools", "tool_choice", "max_tokens", "max_completion_tokens", "temperature",
      "top_p", "top_k", "min_p", "stop", "stop_token_ids", "logit_bias", "n", "stream", "stream_options",
      "response_format", "reasoning_effort", "reasoning", "chat_template_kwargs", "prompt", "text",
      "input_ids", "sampling_params", "logprobs", "top_logprobs", "seed", "rid", "echo"};
  for (int iter = 0; iter < 1500; ++iter) {
    std::string body = "{";
    for (int k = rng() % 6; k > 0; --k) {
      if (body.size() > 1) body += ",";
      body += "\"" + keys[rng() % keys.size()] + "\": " + values[rng() % values.size()];
    }
    body += "}";
    if (iter % 10 == 0) body = RandomText(rng, 12);
    const auto json = ParseJsonBody(body);
    if (!json.ok()) {
      EXPECT_EQ(json.error().status, 400);
      continue;
    }
    const auto chat = ParseChatRequest(json.value());
    if (chat.ok()) {
      (void)PrepareChatTemplateInputs(chat.value(), ContentFormat::kString);
      (void)ResolveSampling(chat->sampling, {}, 1000);
    } else {
      EXPECT_FALSE(ErrorBody(chat.error()).empty());
    }
    (void)ParseCompletionRequest(json.value());
    const auto gen = ParseGenerateRequest(json.value());
    if (!gen.ok()) {
      EXPECT_FALSE(GenerateErrorBody(gen.error()).empty());
    }
  }
}

}  // namespace
}  // namespace tern::api
