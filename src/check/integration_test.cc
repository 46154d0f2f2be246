// `tern check` against the scripted server (testdata/mock_server.mjs) in each
// dialect and failure mode: the exit code and which checks pass or fail.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <map>

#include "check/mock_process.h"
#include "check/runner.h"

namespace tern::check {
namespace {

using testing::MockServer;

struct CheckRun {
  RunReport report;
  std::map<std::string, const CheckResult*> by_name;
  Outcome outcome(const std::string& name) const {
    auto it = by_name.find(name);
    return it == by_name.end() ? Outcome::kSkip : it->second->outcome;
  }
  std::string detail(const std::string& name) const {
    auto it = by_name.find(name);
    return it == by_name.end() ? "(not run)" : it->second->detail;
  }
  std::string Dump() const {
    std::string s = report.fatal;
    for (const auto& r : report.results) s += "\n  " + r.name + " " + OutcomeName(r.outcome) + ": " + r.detail;
    return s;
  }
};

CheckRun RunAgainst(const std::string& url, const std::string& suite, CheckOptions o = {}) {
  o.url = url;
  o.suite = suite;
  o.timeout_s = o.timeout_s == CheckOptions{}.timeout_s ? 20 : o.timeout_s;
  CheckRun run;
  run.report = RunChecks(o);
  for (const auto& r : run.report.results) run.by_name[r.name] = &r;
  return run;
}

#define START_MOCK(var, ...)                                    \
  MockServer var(__VA_ARGS__);                                  \
  if (testing::NodeBinary().empty()) GTEST_SKIP() << "no node"; \
  ASSERT_TRUE(var.ok()) << var.error()

bool Has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

const char* const kStructural[] = {"model_info",  "determinism",    "stream_consistency",
                                   "concurrency", "error_handling", "latency"};
const char* const kSemantic[] = {"simple_completion", "arithmetic_no_thinking", "arithmetic_thinking",
                                 "multi_turn_recall", "tool_calling",           "long_context"};

class Integration : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { signal(SIGPIPE, SIG_IGN); }
};

TEST_F(Integration, CorrectModelPassesTheFullBatteryInEveryDialect) {
  for (const char* dialect : {"sglang", "vllm", "llamacpp"}) {
    START_MOCK(mock, dialect);
    CheckRun run = RunAgainst(mock.url(), "full");
    EXPECT_EQ(run.report.exit_code, kExitPassed) << dialect << run.Dump();
    EXPECT_EQ(run.report.results.size(), 16u);
    EXPECT_EQ(run.report.Count(Outcome::kPass), 16) << dialect << run.Dump();
    EXPECT_EQ(run.report.server.model, "mock/Qwen3-8B");
    const std::string d = dialect;
    if (d == "sglang") {
      EXPECT_EQ(run.report.server.dialect, "sglang");
      EXPECT_EQ(run.report.server.info_endpoint, "/model_info");
      EXPECT_EQ(run.report.server.context_length, 32768);
      EXPECT_TRUE(Has(run.detail("stream_consistency"), "usage chunk")) << run.detail("stream_consistency");
      EXPECT_TRUE(Has(run.detail("arithmetic_thinking"), "reasoning_content"));
    } else if (d == "vllm") {
      EXPECT_EQ(run.report.server.dialect, "vllm");
      EXPECT_EQ(run.report.server.info_endpoint, "/v1/models");
      EXPECT_TRUE(Has(run.detail("arithmetic_thinking"), "chars of reasoning")) << run.detail("arithmetic_thinking");
      // The old-vLLM 400 on reasoning_effort "none" is learned once and noted.
      ASSERT_EQ(run.report.server.notes.size(), 1u);
      EXPECT_TRUE(Has(run.report.server.notes[0], "server rejected reasoning_effort")) << run.report.server.notes[0];
      EXPECT_TRUE(Has(run.detail("degenerate_output"), "logprobs finite")) << run.detail("degenerate_output");
    } else {
      EXPECT_EQ(run.report.server.dialect, "llama.cpp");
      EXPECT_EQ(run.report.server.context_length, 8192);  // n_ctx of /props, not n_ctx_train
      EXPECT_EQ(run.report.server.model_path, "/models/qwen3-8b-q4_k_m.gguf");
      EXPECT_TRUE(Has(run.detail("stream_consistency"), "no usage chunk")) << run.detail("stream_consistency");
      EXPECT_TRUE(Has(run.detail("latency"), "counted by chunks")) << run.detail("latency");
    }
  }
}

// Issue 24's faults, each against the scripted server with it; the same
// checks pass against the correct one (CorrectModelPassesTheFullBatteryInEveryDialect).
TEST_F(Integration, SpecialTokenTextWithToolsFails) {
  START_MOCK(mock, "sglang,special-tokens");
  CheckRun run = RunAgainst(mock.url(), "special_tokens,tool_calling");
  EXPECT_EQ(run.report.exit_code, kExitFailed);
  EXPECT_EQ(run.outcome("special_tokens"), Outcome::kFail);
  EXPECT_TRUE(Has(run.detail("special_tokens"), "with tools")) << run.detail("special_tokens");
  EXPECT_TRUE(Has(run.detail("special_tokens"), "content holds '<|im_end|>'")) << run.detail("special_tokens");
}

TEST_F(Integration, FlatErrorBodiesFailForOpenAiClients) {
  START_MOCK(mock, "sglang,flat-errors");
  CheckRun run = RunAgainst(mock.url(), "openai_error_body,error_handling");
  EXPECT_EQ(run.report.exit_code, kExitFailed);
  EXPECT_EQ(run.outcome("openai_error_body"), Outcome::kFail);
  EXPECT_TRUE(Has(run.detail("openai_error_body"), "400 status code (no body)")) << run.detail("openai_error_body");
  EXPECT_EQ(run.outcome("error_handling"), Outcome::kPass) << run.detail("error_handling");  // SGLang's form is fine there
}

TEST_F(Integration, UntrimmedStopStringFails) {
  START_MOCK(mock, "vllm,untrimmed-stop");
  CheckRun run = RunAgainst(mock.url(), "stop_trimmed");
  EXPECT_EQ(run.report.exit_code, kExitFailed);
  EXPECT_EQ(run.outcome("stop_trimmed"), Outcome::kFail);
  EXPECT_TRUE(Has(run.detail("stop_trimmed"), "is still in the text")) << run.detail("stop_trimmed");
}

TEST_F(Integration, NanLogprobsAreDegenerate) {
  START_MOCK(mock, "sglang,nan-logprobs");
  CheckRun run = RunAgainst(mock.url(), "full");
  EXPECT_EQ(run.report.exit_code, kExitFailed);
  EXPECT_EQ(run.outcome("simple_completion"), Outcome::kFail);
  EXPECT_TRUE(Has(run.detail("simple_completion"), "token logprobs are NaN or infinite"))
      << run.detail("simple_completion");
  EXPECT_EQ(run.outcome("degenerate_output"), Outcome::kFail);
  EXPECT_TRUE(Has(run.detail("degenerate_output"), "non-finite number")) << run.detail("degenerate_output");
  EXPECT_EQ(run.outcome("tool_calling"), Outcome::kPass);  // no logprobs asked there
  for (const char* s : kStructural) EXPECT_EQ(run.outcome(s), Outcome::kPass) << s << ": " << run.detail(s);
}

TEST_F(Integration, BangOutputFailsEverySemanticCheckButNoStructuralOne) {
  START_MOCK(mock, "sglang,bang-output");
  CheckRun run = RunAgainst(mock.url(), "full");
  EXPECT_EQ(run.report.exit_code, kExitFailed);
  for (const char* s : kSemantic) {
    EXPECT_EQ(run.outcome(s), Outcome::kFail) << s;
    EXPECT_TRUE(Has(run.detail(s), "'!'")) << s << ": " << run.detail(s);
  }
  for (const char* s : kStructural) EXPECT_EQ(run.outcome(s), Outcome::kPass) << s << ": " << run.detail(s);
  EXPECT_TRUE(Has(run.detail("determinism"), "output itself degenerate")) << run.detail("determinism");
  EXPECT_EQ(run.outcome("degenerate_output"), Outcome::kFail);
}

TEST_F(Integration, ReasoningInContentAndNullContentWithThinking) {
  {
    START_MOCK(mock, "sglang,reasoning-in-content");
    CheckRun run = RunAgainst(mock.url(), "smoke");
    EXPECT_EQ(run.report.exit_code, kExitFailed);
    EXPECT_EQ(run.outcome("arithmetic_no_thinking"), Outcome::kPass);
    EXPECT_EQ(run.outcome("arithmetic_thinking"), Outcome::kFail);
    EXPECT_TRUE(Has(run.detail("arithmetic_thinking"), "<think> block came back inside content")) << run.Dump();
  }
  for (const char* mode : {"sglang,null-content-thinking", "vllm,null-content-thinking"}) {
    START_MOCK(mock, mode);
    CheckRun run = RunAgainst(mock.url(), "smoke");
    EXPECT_EQ(run.report.exit_code, kExitFailed) << mode;
    EXPECT_EQ(run.outcome("simple_completion"), Outcome::kPass) << mode;
    EXPECT_EQ(run.outcome("arithmetic_thinking"), Outcome::kFail) << mode;
    EXPECT_TRUE(Has(run.detail("arithmetic_thinking"), "content is null after")) << mode << run.Dump();
  }
}

TEST_F(Integration, SlowHealthWaitsOrGivesUp) {
  for (const char* mode : {"sglang,slow-health", "llamacpp,slow-health"}) {
    START_MOCK(mock, mode, {"--slow-health-ms", "1500"});
    // No --wait: one probe, exit 2 with the server's state.
    CheckRun now = RunAgainst(mock.url(), "smoke");
    EXPECT_EQ(now.report.exit_code, kExitUnreachable) << mode;
    EXPECT_TRUE(Has(now.report.fatal, "/health answered 503")) << now.report.fatal;
    EXPECT_TRUE(Has(now.report.fatal, "--wait")) << now.report.fatal;
    if (std::string(mode).rfind("llamacpp", 0) == 0) {
      EXPECT_TRUE(Has(now.report.fatal, "Loading model")) << now.report.fatal;
    }
    EXPECT_TRUE(now.report.results.empty());
    // --wait 30: polls until healthy, then runs.
    CheckOptions o;
    o.wait_s = 30;
    CheckRun waited = RunAgainst(mock.url(), "smoke", o);
    EXPECT_EQ(waited.report.exit_code, kExitPassed) << mode << waited.Dump();
    EXPECT_EQ(waited.report.server.ready_endpoint, "/health");
  }
  {
    START_MOCK(mock, "sglang,slow-health", {"--slow-health-ms", "60000"});
    CheckOptions o;
    o.wait_s = 1.2;
    auto t0 = std::chrono::steady_clock::now();
    CheckRun run = RunAgainst(mock.url(), "smoke", o);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(run.report.exit_code, kExitUnreachable);
    EXPECT_TRUE(Has(run.report.fatal, "did not become ready within 1 s")) << run.report.fatal;
    EXPECT_GE(s, 1.1);
    EXPECT_LT(s, 5.0);
  }
}

TEST_F(Integration, DroppedStreamIsAFailureNotACrash) {
  START_MOCK(mock, "sglang,drop-mid-stream");
  CheckRun run = RunAgainst(mock.url(), "full");
  EXPECT_EQ(run.report.exit_code, kExitFailed);
  EXPECT_EQ(run.outcome("stream_consistency"), Outcome::kFail);
  EXPECT_TRUE(Has(run.detail("stream_consistency"), "stream ended without [DONE] after 2 events")) << run.Dump();
  EXPECT_EQ(run.outcome("latency"), Outcome::kFail);
  EXPECT_EQ(run.outcome("determinism"), Outcome::kPass);
  EXPECT_EQ(run.outcome("simple_completion"), Outcome::kPass);
}

TEST_F(Integration, RandomWeightModelFailsSemanticPassesStructural) {
  // What `tern serve` with a synthetic model must produce (see run_battery.sh --expect random-weights).
  START_MOCK(mock, "sglang,nonsense");
  CheckRun run = RunAgainst(mock.url(), "full");
  EXPECT_EQ(run.report.exit_code, kExitFailed);
  for (const char* s : kSemantic) EXPECT_EQ(run.outcome(s), Outcome::kFail) << s << ": " << run.detail(s);
  for (const char* s : kStructural) EXPECT_EQ(run.outcome(s), Outcome::kPass) << s << ": " << run.detail(s);
}

TEST_F(Integration, NondeterminismAndBadErrorsAreCaught) {
  START_MOCK(mock, "vllm,nondeterministic,error-500");
  CheckRun run = RunAgainst(mock.url(), "determinism,stream_consistency,concurrency,error_handling");
  EXPECT_EQ(run.report.exit_code, kExitFailed);
  ASSERT_EQ(run.report.results.size(), 4u);
  EXPECT_TRUE(Has(run.detail("determinism"), "greedy replies differ")) << run.Dump();
  EXPECT_EQ(run.outcome("stream_consistency"), Outcome::kFail);
  EXPECT_TRUE(Has(run.detail("concurrency"), "2 different replies among 4")) << run.Dump();
  EXPECT_TRUE(Has(run.detail("error_handling"), "HTTP 500 for a malformed request")) << run.Dump();
}

TEST_F(Integration, ServerWithoutHealthIsReadyViaModels) {
  START_MOCK(mock, "llamacpp,no-health");
  CheckRun run = RunAgainst(mock.url(), "smoke");
  EXPECT_EQ(run.report.exit_code, kExitPassed) << run.Dump();
  EXPECT_EQ(run.report.server.ready_endpoint, "/v1/models");
}

TEST_F(Integration, ApiKey) {
  START_MOCK(mock, "sglang", {"--api-key", "sekrit"});
  CheckOptions o;
  o.api_key = "sekrit";
  CheckRun ok = RunAgainst(mock.url(), "smoke", o);
  EXPECT_EQ(ok.report.exit_code, kExitPassed) << ok.Dump();
  CheckRun no = RunAgainst(mock.url(), "smoke");  // /health is exempt, the rest says 401
  EXPECT_EQ(no.report.exit_code, kExitFailed);
  EXPECT_TRUE(Has(no.detail("model_info"), "/model_info answered 401 (Unauthorized)")) << no.Dump();
  EXPECT_TRUE(Has(no.detail("simple_completion"), "HTTP 401: Unauthorized")) << no.Dump();
}

TEST_F(Integration, TimeoutsBoundAHungServer) {
  START_MOCK(mock, "sglang,hang");
  CheckOptions o;
  o.timeout_s = 1;
  auto t0 = std::chrono::steady_clock::now();
  CheckRun run = RunAgainst(mock.url(), "simple_completion,latency", o);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(run.report.exit_code, kExitFailed);
  EXPECT_TRUE(Has(run.detail("simple_completion"), "timed out")) << run.Dump();
  EXPECT_EQ(run.outcome("latency"), Outcome::kFail);
  EXPECT_LT(s, 10.0);
}

// A reply that never ends but never pauses long enough for a read timeout:
// the whole request is bounded too (it held tern check for ever).
TEST_F(Integration, TimeoutsBoundATricklingServer) {
  START_MOCK(mock, "sglang,trickle");
  CheckOptions o;
  o.timeout_s = 1;
  auto t0 = std::chrono::steady_clock::now();
  CheckRun run = RunAgainst(mock.url(), "simple_completion", o);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(run.report.exit_code, kExitFailed);
  EXPECT_TRUE(Has(run.detail("simple_completion"), "no whole reply within")) << run.Dump();
  EXPECT_LT(s, 30.0);
}

TEST_F(Integration, NothingListeningIsExit2) {
  const int port = testing::UnusedPort();
  ASSERT_GT(port, 0);
  CheckRun run = RunAgainst("http://127.0.0.1:" + std::to_string(port), "smoke");
  EXPECT_EQ(run.report.exit_code, kExitUnreachable);
  EXPECT_TRUE(Has(run.report.fatal, "connection failed")) << run.report.fatal;
  CheckRun bad = RunAgainst("ftp://127.0.0.1:1", "smoke");
  EXPECT_EQ(bad.report.exit_code, kExitUnreachable);
  EXPECT_TRUE(Has(bad.report.fatal, "unsupported scheme")) << bad.report.fatal;
}

}  // namespace
}  // namespace tern::check
