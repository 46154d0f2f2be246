// /v1/completions and /generate request validation, sampling resolution
// (SGLang's SamplingParams.verify messages), context-length checks and JSON
// body decoding.
#include <gtest/gtest.h>

#include "api/error_json.h"
#include "api/requests.h"
#include "api/sampling.h"

namespace tern::api {
namespace {

Json J(std::string_view text) { return Json::parse(text); }

template <typename T>
void ExpectError(const ApiResult<T>& r, std::string_view type, std::string_view message) {
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().status, 400);
  EXPECT_EQ(r.error().type, type);
  EXPECT_EQ(r.error().message, message);
}

// ---- JSON bodies ----

TEST(JsonBody, DecodesOrFailsLikeFastAPI) {
  const auto ok = ParseJsonBody(R"({"a": [1, 2]})");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok.value()["a"][1], 2);
  ExpectError(ParseJsonBody("{\"a\": }"), "Bad Request",
              "[{'type': 'json_invalid', 'loc': ('body', 6), 'msg': 'JSON decode error'}]");
  ExpectError(ParseJsonBody(""), "Bad Request",
              "[{'type': 'json_invalid', 'loc': ('body', 0), 'msg': 'JSON decode error'}]");
  ExpectError(ParseJsonBody(std::string(5000, '[')), "Bad Request",
              "[{'type': 'json_invalid', 'loc': ('body', 0), 'msg': 'JSON decode error'}]");
  EXPECT_FALSE(ParseJsonBody("{\"s\": \"\xff\"}").ok());  // invalid UTF-8
}

// ---- /v1/completions ----

TEST(CompletionRequest, PromptForms) {
  auto r = ParseCompletionRequest(J(R"({"prompt": "Once upon"})"));
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->batch);
  EXPECT_EQ(*r->prompts[0].text, "Once upon");
  EXPECT_EQ(r->sampling.max_new_tokens, 16);  // CompletionRequest default
  r = ParseCompletionRequest(J(R"({"prompt": [1, 2, 3], "max_tokens": null})"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->prompts[0].token_ids, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_FALSE(r->sampling.max_new_tokens);  // null: to the context limit (vLLM)
  r = ParseCompletionRequest(J(R"({"prompt": ["a", "b"]})"));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->batch);
  EXPECT_EQ(r->prompts.size(), 2u);
  r = ParseCompletionRequest(J(R"({"prompt": [[1], [2, 3]], "logprobs": 2, "echo": true, "stream": true,
                                   "stream_options": {"include_usage": true}, "temperature": 0})"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->prompts[1].token_ids, (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(r->logprobs, 2);
  EXPECT_TRUE(r->echo && r->stream && r->include_usage);
}

TEST(CompletionRequest, Errors) {
  ExpectError(ParseCompletionRequest(J("{}")), "Bad Request",
              "[{'type': 'missing', 'loc': ('body', 'prompt'), 'msg': 'Field required'}]");
  ExpectError(ParseCompletionRequest(J(R"({"prompt": 5})")), "Bad Request",
              "[{'type': 'list_type', 'loc': ('body', 'prompt', 'list[int]'), 'msg': 'Input should be a valid "
              "list'}, {'type': 'list_type', 'loc': ('body', 'prompt', 'list[list[int]]'), 'msg': 'Input should "
              "be a valid list'}, {'type': 'string_type', 'loc': ('body', 'prompt', 'str'), 'msg': 'Input "
              "should be a valid string'}, {'type': 'list_type', 'loc': ('body', 'prompt', 'list[str]'), 'msg': "
              "'Input should be a valid list'}]");
  ExpectError(ParseCompletionRequest(J(R"({"prompt": "x", "max_tokens": 0})")), "Bad Request",
              "[{'type': 'value_error', 'loc': ('body', 'max_tokens'), 'msg': 'Value error, max_tokens must be "
              "positive'}]");
  for (const char* empty : {R"({"prompt": ""})", R"({"prompt": []})", R"({"prompt": ["", ""]})", R"({"prompt": [[]]})"})
    ExpectError(ParseCompletionRequest(J(empty)), "BadRequestError", "Prompt cannot be empty");
  ExpectError(ParseCompletionRequest(J(R"({"prompt": "x", "logprobs": -1})")), "BadRequestError",
              "`logprobs` must be a positive value.");
  ExpectError(ParseCompletionRequest(J(R"({"prompt": "x", "n": -2})")), "BadRequestError",
              "n must be at least 1, got -2.");
  auto ebnf = ParseCompletionRequest(J(R"({"prompt": "x", "ebnf": "root ::= 'a'"})"));
  ASSERT_TRUE(ebnf.ok());
  EXPECT_EQ(ebnf->sampling.constraint->kind, ConstraintRequest::Kind::kEbnf);
  ExpectError(ParseCompletionRequest(J(R"({"prompt": "x", "ebnf": "root ::= 'a'", "regex": "a"})")), "BadRequestError",
              "Only one of regex, json_schema, or ebnf can be set.");
}

// ---- /generate ----

TEST(GenerateRequest, InputsAndSamplingParams) {
  auto r = ParseGenerateRequest(J(R"({"text": "The capital city of France is",
      "sampling_params": {"temperature": 0, "max_new_tokens": 8, "stop": ["\n"], "top_k": 20}})"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r->prompts[0].text, "The capital city of France is");
  EXPECT_EQ(r->sampling.max_new_tokens, 8);
  EXPECT_EQ(r->sampling.temperature->value, 0);
  EXPECT_TRUE(r->sampling.temperature->is_int);  // kept as the JSON int it was
  EXPECT_EQ(r->sampling.stop, std::vector<std::string>{"\n"});
  r = ParseGenerateRequest(J(R"({"input_ids": [10, 11, 12], "stream": true, "return_logprob": true,
                                 "top_logprobs_num": 3, "rid": "abc"})"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->prompts[0].token_ids, (std::vector<int32_t>{10, 11, 12}));
  EXPECT_EQ(r->sampling.max_new_tokens, 128);  // SamplingParams default
  EXPECT_TRUE(r->stream && r->return_logprob);
  EXPECT_EQ(r->top_logprobs_num, 3);
  EXPECT_EQ(*r->rid, "abc");
  r = ParseGenerateRequest(J(R"({"text": ["a", "b"], "input_ids": [1]})"));  // text wins
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->batch);
  EXPECT_EQ(r->prompts.size(), 2u);
  r = ParseGenerateRequest(J(R"({"input_ids": [[1, 2], [3]], "sampling_params": {"max_new_tokens": null}})"));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->batch);
  EXPECT_FALSE(r->sampling.max_new_tokens);
}

TEST(GenerateRequest, Errors) {
  ExpectError(ParseGenerateRequest(J(R"({"sampling_params": {}})")), "BadRequestError",
              "Either text, input_ids or input_embeds should be provided.");
  ExpectError(ParseGenerateRequest(J(R"({"input_ids": []})")), "BadRequestError", "input_ids cannot be empty.");
  ExpectError(ParseGenerateRequest(J(R"({"text": "x", "sampling_params": {"max_tokens": 5}})")), "BadRequestError",
              "Unexpected keyword argument 'max_tokens'");
  auto regex = ParseGenerateRequest(J(R"({"text": "x", "sampling_params": {"regex": "a+"}})"));
  ASSERT_TRUE(regex.ok());
  EXPECT_EQ(regex->sampling.constraint->kind, ConstraintRequest::Kind::kRegex);
  EXPECT_EQ(regex->sampling.constraint->text, "a+");
  auto js = ParseGenerateRequest(J(R"({"text": "x", "sampling_params": {"json_schema": "{\"type\":\"string\"}"}})"));
  ASSERT_TRUE(js.ok());
  EXPECT_EQ(js->sampling.constraint->kind, ConstraintRequest::Kind::kJsonSchema);
  ExpectError(ParseGenerateRequest(J(R"({"text": "x", "sampling_params": {"regex": "a+", "ebnf": "root ::= 'a'"}})")),
              "BadRequestError", "Only one of regex, json_schema, or ebnf can be set.");
  ExpectError(ParseGenerateRequest(J(R"({"text": "x", "sampling_params": {"json_schema": {"type": "string"}}})")),
              "BadRequestError", "sampling_params.json_schema must be a string.");
  ExpectError(ParseGenerateRequest(J(R"({"text": 5})")), "Bad Request",
              "[{'type': 'list_type', 'loc': ('body', 'text', 'list[str]'), 'msg': 'Input should be a valid list'}, "
              "{'type': 'string_type', 'loc': ('body', 'text', 'str'), 'msg': 'Input should be a valid string'}]");
  ExpectError(ParseGenerateRequest(J(R"({"text": "x", "sampling_params": {"temperature": "hot"}})")), "Bad Request",
              "[{'type': 'float_parsing', 'loc': ('body', 'sampling_params', 'temperature'), 'msg': 'Input should "
              "be a valid number, unable to parse string as a number'}]");
  // /generate errors use the native body, except FastAPI's validation ones.
  const auto e = ParseGenerateRequest(J(R"({"input_ids": []})"));
  // SGLang's native {"error":{"message"}}, with OpenAI's other fields in the object (issue 24).
  EXPECT_EQ(GenerateErrorBody(e.error()),
            R"({"error":{"message":"input_ids cannot be empty.","type":"BadRequestError","param":null,"code":400}})");
  const auto v = ParseGenerateRequest(J(R"({"text": 5})"));
  EXPECT_EQ(GenerateErrorBody(v.error()).substr(0, 28), R"({"object":"error","message":)");
}

// ---- sampling ----

ApiResult<SamplingParams> Resolve(std::string_view chat_extra, GenerationDefaults d = {}) {
  std::string body = R"({"messages": [{"role": "user", "content": "x"}])";
  if (!chat_extra.empty()) body += std::string(", ") + std::string(chat_extra);
  body += "}";
  const auto r = ParseChatRequest(J(body));
  EXPECT_TRUE(r.ok()) << r.error().message;
  return ResolveSampling(r->sampling, d, 151936);
}

TEST(Sampling, DefaultsAndPrecedence) {
  auto p = Resolve("");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->temperature, 1.0);
  EXPECT_EQ(p->top_p, 1.0);
  EXPECT_EQ(p->top_k, -1);
  EXPECT_EQ(p->min_p, 0.0);
  EXPECT_EQ(p->repetition_penalty, 1.0);
  EXPECT_FALSE(p->max_new_tokens);
  GenerationDefaults qwen3;  // Qwen3's generation_config.json
  qwen3.temperature = 0.6;
  qwen3.top_p = 0.95;
  qwen3.top_k = 20;
  p = Resolve(R"("top_p": 0.8)", qwen3);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->temperature, 0.6);
  EXPECT_EQ(p->top_p, 0.8);  // the request wins
  EXPECT_EQ(p->top_k, 20);
  p = Resolve(R"("temperature": 0)", qwen3);
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->greedy());
  EXPECT_EQ(p->temperature, 1.0);
  EXPECT_EQ(p->top_k, 1);
  p = Resolve(R"("logit_bias": {"151643": -100, " 7 ": 2.5}, "seed": 42, "n": 2)");
  ASSERT_TRUE(p.ok());
  ASSERT_EQ(p->logit_bias.size(), 2u);
  EXPECT_EQ(p->logit_bias[0], std::make_pair(151643, -100.0f));
  EXPECT_EQ(p->logit_bias[1], std::make_pair(7, 2.5f));
  EXPECT_EQ(p->seed, 42);
  EXPECT_EQ(p->n, 2);
  // Keys spelling one id set it once, the last winning; biases past [-100, 100] are clamped (two 3e38
  // biases of one id once summed to +inf and made every probability NaN).
  p = Resolve(R"("logit_bias": {"5": 3e38, "05": 3e38, "9": -1e30, " +5": 1.5, "11": 250})");
  ASSERT_TRUE(p.ok());
  ASSERT_EQ(p->logit_bias.size(), 3u);
  EXPECT_EQ(p->logit_bias[0], std::make_pair(5, 1.5f));
  EXPECT_EQ(p->logit_bias[1], std::make_pair(9, -100.0f));
  EXPECT_EQ(p->logit_bias[2], std::make_pair(11, 100.0f));
}

TEST(Sampling, VerifyMessages) {
  const std::pair<const char*, const char*> cases[] = {
      {R"("temperature": -1)", "temperature must be a non-negative finite number, got -1.0."},
      {R"("top_p": 0)", "top_p must be in (0, 1], got 0.0."},
      {R"("top_p": 1.5)", "top_p must be in (0, 1], got 1.5."},
      {R"("min_p": 2)", "min_p must be in [0, 1], got 2.0."},
      {R"("top_k": 0)", "top_k must be -1 (disable) or at least 1, got 0."},
      {R"("top_k": -5)", "top_k must be -1 (disable) or at least 1, got -5."},
      {R"("frequency_penalty": 3)", "frequency_penalty must be in [-2, 2], got 3.0."},
      {R"("presence_penalty": -2.5)", "presence_penalty must be in [-2, 2], got -2.5."},
      {R"("repetition_penalty": 0)", "repetition_penalty must be in (0, 2] (1.0 = no penalty), got 0.0."},
      {R"("min_tokens": -1)", "min_new_tokens must be in [0, max_new_tokens], got -1."},
      {R"("max_tokens": -1)", "max_new_tokens must be at least 0, got -1."},
      {R"("max_tokens": 4, "min_tokens": 5)", "min_new_tokens must be in [0, max_new_tokens(4)], got 5."},
      {R"("logit_bias": {"999999": 1})", "logit_bias must has keys in [0, 151935], got 999999."},
      {R"("logit_bias": {"abc": 1})", "invalid literal for int() with base 10: 'abc'"},
  };
  for (const auto& [extra, message] : cases) {
    const auto p = Resolve(extra);
    ASSERT_FALSE(p.ok()) << extra;
    EXPECT_EQ(p.error().type, "BadRequestError");
    EXPECT_EQ(p.error().message, message) << extra;
  }
  // The bounds on stop lists: at the limit accepted, past it a 400 naming it.
  auto list = [](size_t n, size_t bytes, const char* field, bool quoted) {
    std::string v = std::string("\"") + field + "\": [";
    for (size_t i = 0; i < n; ++i)
      v += (i ? "," : "") + (quoted ? "\"" + std::string(bytes, 'x') + "\"" : std::to_string(i + 1));
    return v + "]";
  };
  EXPECT_TRUE(Resolve(list(256, 256, "stop", true)).ok());
  EXPECT_TRUE(Resolve(list(1024, 0, "stop_token_ids", false)).ok());
  const std::pair<std::string, const char*> limits[] = {
      {list(257, 1, "stop", true), "stop has 257 strings; at most 256 are accepted."},
      {list(2, 32 * 1024 + 1, "stop", true), "stop strings have 65538 bytes in all; at most 65536 are accepted."},
      {list(1025, 0, "stop_token_ids", false), "stop_token_ids has 1025 ids; at most 1024 are accepted."},
  };
  for (const auto& [extra, message] : limits) {
    const auto p = Resolve(extra);
    ASSERT_FALSE(p.ok()) << extra.substr(0, 40);
    EXPECT_EQ(p.error().message, message);
  }
  // /generate prints integers as Python ints.
  const auto g = ParseGenerateRequest(J(R"({"text": "x", "sampling_params": {"temperature": -2}})"));
  ASSERT_TRUE(g.ok());
  const auto p = ResolveSampling(g->sampling, {}, 100);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().message, "temperature must be a non-negative finite number, got -2.");
}

TEST(Sampling, ContextLength) {
  ContextCheck c = CheckContextLength(100, 50, 4096, false);
  EXPECT_FALSE(c.error);
  c = CheckContextLength(4096, 1, 4096, false);
  ASSERT_TRUE(c.error);
  EXPECT_EQ(c.error->message, "The input (4096 tokens) is longer than the model's context length (4096 tokens).");
  c = CheckContextLength(4000, 200, 4096, false);
  ASSERT_TRUE(c.error);
  EXPECT_EQ(c.error->message,
            "Requested token count exceeds the model's maximum context length of 4096 tokens. You requested a "
            "total of 4200 tokens: 4000 tokens from the input messages and 200 tokens for the completion. "
            "Please reduce the number of tokens in the input messages or the completion to fit within the limit.");
  c = CheckContextLength(4000, 96, 4096, false);
  EXPECT_FALSE(c.error);
  c = CheckContextLength(5000, 100, 4096, true);
  EXPECT_FALSE(c.error);
  EXPECT_EQ(c.input_tokens, 4096);
  EXPECT_EQ(c.max_new_tokens, 0);
  c = CheckContextLength(4000, 200, 4096, true);
  EXPECT_EQ(c.max_new_tokens, 96);
  c = CheckContextLength(10, std::nullopt, 4096, false);
  EXPECT_FALSE(c.error);
}

}  // namespace
}  // namespace tern::api
