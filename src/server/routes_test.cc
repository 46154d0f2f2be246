// tern serve's routes called with plain requests (http_types.h), no socket:
// the whole route table (ServerRoutes) over the bundled demo model
// (models/demo) and a running engine. Expected values come from outside the
// code under test: the model's config.json, FastAPI's and OpenAI's error
// wording, arithmetic.
#include "server/routes.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "kernels/cpu_features.h"
#include "server/context.h"
#include "server/generation.h"
#include "server/http_routes.h"

namespace tern::server {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

std::string DemoDir() {
  const char* root = std::getenv("TERN_SOURCE_DIR");
  return std::string(root ? root : ".") + "/models/demo";
}

HttpRequest Request(std::string method, std::string path, std::string body = "",
                    std::string content_type = "application/json") {
  HttpRequest r{.method = std::move(method), .path = std::move(path), .body = std::move(body)};
  if (!r.body.empty()) {
    r.headers.Add("Content-Type", std::move(content_type));
    r.headers.Add("Content-Length", std::to_string(r.body.size()));
  }
  return r;
}

// The data: payloads of an SSE body, in order.
std::vector<std::string> SseData(const std::string& body) {
  std::vector<std::string> out;
  size_t pos = 0;
  while ((pos = body.find("data: ", pos)) != std::string::npos) {
    const size_t end = body.find("\n\n", pos);
    out.push_back(body.substr(pos + 6, end - pos - 6));
    pos = end;
  }
  return out;
}

// A client that reads `chunks` chunks and then goes away.
class LeavingClient final : public ChunkSink {
 public:
  explicit LeavingClient(int chunks) : left_(chunks) {}
  bool Write(std::string_view data) override {
    if (left_ <= 0) return false;
    got += data;
    --left_;
    return true;
  }
  bool Writable() override { return left_ > 0; }
  void Done() override { done = true; }
  std::string got;
  bool done = false;

 private:
  int left_;
};

class RoutesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ctx_ = new ServerContext;
    ctx_->opts.model_path = DemoDir();
    ctx_->opts.threads = 1;
    ctx_->opts.reasoning_parser = "auto";  // tern serve's defaults
    ctx_->opts.tool_call_parser = "auto";
    ctx_->opts.max_running_requests = 4;
    ctx_->opts.enable_metrics = true;
    ctx_->model_name = "demo";
    const Status loaded = LoadServerModel(*ctx_);
    ASSERT_TRUE(loaded.ok()) << loaded.message();
    const Status started = StartEngine(*ctx_);
    ASSERT_TRUE(started.ok()) << started.message();
    routes_ = new HttpRoutes(ServerRoutes(*ctx_));
    std::ifstream f(DemoDir() + "/config.json");
    config_ = json::parse(f);
  }
  static void TearDownTestSuite() {
    delete routes_;
    delete ctx_;
  }
  void SetUp() override {
    ASSERT_NE(routes_, nullptr) << "the demo model did not load";
    ctx_->health = Health::kUp;
    ctx_->opts.api_key.clear();
  }

  static HttpResponse Call(HttpRequest req, ChunkSink* sink = nullptr) { return routes_->Handle(std::move(req), sink); }
  static json Json(const HttpResponse& res) { return json::parse(res.body); }

  // Waits until the engine runs no request (true) or `timeout` passes.
  static bool EngineIdleWithin(milliseconds timeout) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < until) {
      const EngineMetrics& m = ctx_->engine->metrics();
      if (m.running.load() == 0 && m.queued.load() == 0) return true;
      std::this_thread::sleep_for(milliseconds(20));
    }
    return false;
  }

  static int64_t GeneratedTokens() { return int64_t(ctx_->engine->metrics().generation_tokens_total.load()); }

  static inline ServerContext* ctx_ = nullptr;
  static inline HttpRoutes* routes_ = nullptr;
  static inline json config_;
};

// Output logprobs (choices x reply tokens x (1 + alternatives) <= 2^23): an
// explicit max_new_tokens past it is a 400; without one the replies are capped
// there; a request without logprobs is untouched. The demo model's context is
// 4096 and its KV pool larger.
TEST_F(RoutesTest, OutputLogprobsAreBoundedPerRequest) {
  ASSERT_EQ(ctx_->engine->max_sequence_tokens(), 4096);
  api::SamplingParams s;
  s.n = 128;
  EXPECT_FALSE(BoundOutputLogprobs(*ctx_, s, 10, 20, "x"));
  EXPECT_EQ(s.max_new_tokens, 8388608 / (128 * 21));  // 3120
  s = {};
  EXPECT_FALSE(BoundOutputLogprobs(*ctx_, s, 10, 20, "x"));
  EXPECT_EQ(s.max_new_tokens, 4086);  // the room the context leaves
  s = {};
  s.n = 128;
  EXPECT_FALSE(BoundOutputLogprobs(*ctx_, s, 10, -1, "x"));  // no logprobs
  EXPECT_FALSE(s.max_new_tokens);
  s.max_new_tokens = 3121;
  const auto e = BoundOutputLogprobs(*ctx_, s, 10, 20, "max_tokens or n");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status, 400);
  EXPECT_NE(e->message.find("128 choice(s) of up to 3121 tokens with 20 alternatives each would be 8389248 entries"),
            std::string::npos)
      << e->message;
  s.max_new_tokens = 3120;
  EXPECT_FALSE(BoundOutputLogprobs(*ctx_, s, 10, 20, "x"));
}

TEST_F(RoutesTest, HealthIs503UntilReadyThen200) {
  ctx_->health = Health::kStarting;
  for (const char* path : {"/health", "/health_generate"}) {
    const HttpResponse res = Call(Request("GET", path));
    EXPECT_EQ(res.status, 503) << path;
    EXPECT_EQ(Json(res)["object"], "error");  // the JSON error body every non-2xx reply carries
  }
  ctx_->health = Health::kUp;
  EXPECT_EQ(Call(Request("GET", "/health")).status, 200);  // a one-token probe through the engine
  EXPECT_EQ(Call(Request("GET", "/health_generate")).status, 200);
  ctx_->health = Health::kShuttingDown;
  EXPECT_EQ(Call(Request("GET", "/health")).status, 503);
}

TEST_F(RoutesTest, ModelsListTheServedModelWithItsContextLength) {
  const HttpResponse res = Call(Request("GET", "/v1/models"));
  ASSERT_EQ(res.status, 200);
  EXPECT_EQ(res.content_type, "application/json");
  const json body = Json(res);
  EXPECT_EQ(body["object"], "list");
  ASSERT_EQ(body["data"].size(), 1u);
  EXPECT_EQ(body["data"][0]["id"], "demo");
  EXPECT_EQ(body["data"][0]["object"], "model");
  EXPECT_EQ(body["data"][0]["max_model_len"], config_["max_position_embeddings"]);
  const HttpResponse one = Call(Request("GET", "/v1/models/demo"));
  EXPECT_EQ(one.status, 200);
  EXPECT_EQ(Json(one)["id"], "demo");
  const json info = Json(Call(Request("GET", "/model_info")));
  EXPECT_EQ(info["served_model_name"], "demo");
  EXPECT_EQ(info["context_length"], config_["max_position_embeddings"]);
  EXPECT_EQ(info["model_type"], config_["model_type"]);
}

// tern check --suite numerics --reference-numerics auto reads "activations": "bf16" exactly when
// the kernels round prefill GEMM inputs to BF16 (a CPU path with amx or avx512-bf16, activations not
// forced to f32), "w4a4" under --quant-numerics w4a4, else "f32".
TEST_F(RoutesTest, ServerInfoSaysHowActivationsRound) {
  struct Restore {  // what the environment asked, however the test ends
    ~Restore() { (void)kernels::SetCpuPathFromEnvironment(); }
  } restore;
  const std::string path = kernels::CpuPathName();  // the path in effect (TERN_CPU_PATH may lower it)
  const bool bf16_path = path == "amx" || path == "avx512-bf16";
  ASSERT_TRUE(kernels::SetActivations("f32").ok());
  json info = Json(Call(Request("GET", "/get_server_info")));
  EXPECT_EQ(info["activations"], "f32");
  ASSERT_TRUE(kernels::SetActivations("bf16").ok());
  info = Json(Call(Request("GET", "/get_server_info")));
  EXPECT_EQ(info["activations"], bf16_path ? "bf16" : "f32") << "path " << path;
  EXPECT_EQ(info["cpu_path"], path);
  ctx_->opts.quant_numerics = ActivationNumerics::kGpuQuantized;  // --quant-numerics w4a4
  info = Json(Call(Request("GET", "/get_server_info")));
  ctx_->opts.quant_numerics = ActivationNumerics::kFull;
  EXPECT_EQ(info["activations"], "w4a4");
}

// /v1/detokenize is bounded by what the text could be: the ids of the
// longest token, enough of them for over 64 MiB of its bytes, are a 400
// naming the bound; one fewer than the bound's worth is answered.
TEST_F(RoutesTest, DetokenizedTextIsBounded) {
  int32_t longest = 0;
  for (int32_t id = 0; id < ctx_->tokenizer->vocab_size(); ++id)
    if (ctx_->tokenizer->IdToToken(id).size() > ctx_->tokenizer->IdToToken(longest).size()) longest = id;
  const size_t len = ctx_->tokenizer->IdToToken(longest).size();
  ASSERT_GE(len, 8u);
  auto body = [&](size_t n) {
    std::string b = R"({"tokens": [)";
    b.reserve(n * 7 + 32);
    const std::string id = std::to_string(longest);
    for (size_t i = 0; i < n; ++i) {
      if (i) b += ',';
      b += id;
    }
    return b + "]}";
  };
  const size_t limit = size_t(64) << 20;
  const HttpResponse refused = Call(Request("POST", "/v1/detokenize", body(limit / len + 1)));
  EXPECT_EQ(refused.status, 400);
  EXPECT_NE(refused.body.find("at most 67108864 are returned at once"), std::string::npos) << refused.body.substr(0, 300);
  const HttpResponse small = Call(Request("POST", "/v1/detokenize", body(1000)));
  EXPECT_EQ(small.status, 200);
  EXPECT_GE(Json(small)["text"].get<std::string>().size(), 1000u);
}

TEST_F(RoutesTest, UnknownModelIs404ModelNotFound) {
  const HttpResponse res = Call(Request("GET", "/v1/models/no-such-model"));
  EXPECT_EQ(res.status, 404);
  const json body = Json(res);
  // OpenAI's answer for GET /v1/models/{model} with an unknown id.
  EXPECT_EQ(body["error"]["code"], "model_not_found");
  EXPECT_EQ(body["error"]["param"], "model");
  EXPECT_NE(body["error"]["message"].get<std::string>().find("no-such-model"), std::string::npos);
}

TEST_F(RoutesTest, UnknownPathIs404WithFastApisDetail) {
  for (const char* method : {"GET", "POST"}) {
    const HttpResponse res = Call(Request(method, "/v1/nothing", method == std::string("POST") ? "{}" : ""));
    EXPECT_EQ(res.status, 404) << method;
    EXPECT_EQ(Json(res)["detail"], "Not Found") << method;
  }
}

TEST_F(RoutesTest, MalformedJsonIs400WithSGLangsWording) {
  // FastAPI (SGLang's HTTP layer) reports the byte offset of the bad token.
  const HttpResponse res = Call(Request("POST", "/v1/chat/completions", R"({"a": })"));
  EXPECT_EQ(res.status, 400);
  const json body = Json(res);
  EXPECT_EQ(body["object"], "error");
  EXPECT_EQ(body["message"], "[{'type': 'json_invalid', 'loc': ('body', 6), 'msg': 'JSON decode error'}]");
  EXPECT_EQ(body["code"], 400);
  const HttpResponse text = Call(Request("POST", "/v1/completions", R"({"prompt": "x"})", "text/plain"));
  EXPECT_EQ(text.status, 400);
  EXPECT_EQ(Json(text)["message"], "Unsupported Media Type: Only 'application/json' is allowed");
  // The native route answers in its own shape: {"error": {...}}.
  const HttpResponse native = Call(Request("POST", "/generate", "[1, 2"));
  EXPECT_EQ(native.status, 400);
  EXPECT_TRUE(Json(native).contains("error"));
}

TEST_F(RoutesTest, ApiKeyIsRequiredExceptForHealth) {
  ctx_->opts.api_key = "sekrit";
  EXPECT_EQ(Call(Request("GET", "/v1/models")).status, 401);
  HttpRequest wrong = Request("GET", "/v1/models");
  wrong.headers.Add("Authorization", "Bearer sekriT");
  EXPECT_EQ(Call(wrong).status, 401);
  HttpRequest right = Request("GET", "/v1/models");
  right.headers.Add("authorization", "Bearer sekrit");  // header names are case-insensitive
  EXPECT_EQ(Call(right).status, 200);
  EXPECT_EQ(Call(Request("GET", "/health")).status, 200);
  const HttpResponse denied = Call(Request("POST", "/v1/chat/completions", "{}"));
  EXPECT_EQ(denied.status, 401);
  EXPECT_EQ(Json(denied)["message"], "Unauthorized");
}

TEST_F(RoutesTest, ChatPageIsTheSourceFileServedWithoutTheKey) {
  ctx_->opts.api_key = "sekrit";  // a browser opening the page sends no key
  const HttpResponse page = Call(Request("GET", "/"));
  EXPECT_EQ(page.status, 200);
  EXPECT_EQ(page.content_type, "text/html; charset=utf-8");
  const char* root = std::getenv("TERN_SOURCE_DIR");
  std::ifstream f(std::string(root ? root : ".") + "/src/server/webui/index.html", std::ios::binary);
  const std::string source((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(source.empty());
  EXPECT_EQ(page.body, source);  // byte for byte, as embedded at build time
  // Nothing from elsewhere: the policy allows this server only, and the page names no other.
  EXPECT_NE(page.headers.Get("Content-Security-Policy").find("connect-src 'self'"), std::string::npos);
  EXPECT_EQ(page.body.find("http://"), std::string::npos);
  EXPECT_EQ(page.body.find("https://"), std::string::npos);
  EXPECT_EQ(Call(Request("HEAD", "/")).status, 200);
  EXPECT_EQ(Call(Request("GET", "/index.html")).status, 401);  // only the page itself is open
  EXPECT_EQ(Call(Request("GET", "/model_info")).status, 401);
}

TEST_F(RoutesTest, StreamedChatAnswers17Times19WithReasoningApart) {
  const json req = {{"model", "demo"},   {"messages", json::array({{{"role", "user"}, {"content", "What is 17*19?"}}})},
                    {"stream", true},    {"temperature", 0},
                    {"max_tokens", 200}, {"chat_template_kwargs", {{"enable_thinking", true}}}};
  const HttpResponse res = Call(Request("POST", "/v1/chat/completions", req.dump()));
  ASSERT_EQ(res.status, 200) << res.body;
  EXPECT_EQ(res.content_type, "text/event-stream");
  const std::vector<std::string> events = SseData(res.body);
  ASSERT_GE(events.size(), 3u) << res.body;
  EXPECT_EQ(events.back(), "[DONE]");
  std::string content, reasoning;
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    const json chunk = json::parse(events[i]);
    const json& delta = chunk["choices"][0]["delta"];
    if (delta.contains("content") && delta["content"].is_string()) content += delta["content"].get<std::string>();
    if (delta.contains("reasoning_content") && delta["reasoning_content"].is_string())
      reasoning += delta["reasoning_content"].get<std::string>();
  }
  EXPECT_NE(content.find("323"), std::string::npos) << content;
  EXPECT_FALSE(reasoning.empty());
  EXPECT_EQ(content.find("<think>"), std::string::npos) << content;
  EXPECT_TRUE(EngineIdleWithin(milliseconds(5000)));
}

TEST_F(RoutesTest, ClientLeavingAStreamFreesItsRequest) {
  const json req = {{"model", "demo"},
                    {"prompt", "The capital city of France is"},
                    {"stream", true},
                    {"max_tokens", 3000},
                    {"ignore_eos", true}};
  LeavingClient client(2);
  const int64_t tokens_before = GeneratedTokens();
  const HttpResponse res = Call(Request("POST", "/v1/completions", req.dump()), &client);
  EXPECT_EQ(res.status, 200);
  EXPECT_FALSE(client.done);  // the stream ended early, not with [DONE]
  EXPECT_EQ(client.got.find("[DONE]"), std::string::npos);
  EXPECT_TRUE(EngineIdleWithin(milliseconds(5000)));
  EXPECT_LT(GeneratedTokens() - tokens_before, 2000);  // of 3,000 (margin for a loaded machine)
}

TEST_F(RoutesTest, NonStreamReplyGivesUpWhenTheClientHangsUp) {
  HttpRequest req =
      Request("POST", "/v1/completions",
              json{{"prompt", "The capital city of France is"}, {"max_tokens", 3000}, {"ignore_eos", true}}.dump());
  int asked = 0;
  req.connected = [&asked] { return ++asked < 2; };  // there at the first check, gone at the second
  const int64_t tokens_before = GeneratedTokens();
  Call(std::move(req));
  EXPECT_GE(asked, 2);
  EXPECT_TRUE(EngineIdleWithin(milliseconds(5000)));
  EXPECT_LT(GeneratedTokens() - tokens_before, 2000);  // of 3,000 (margin for a loaded machine)
}

}  // namespace
}  // namespace tern::server
