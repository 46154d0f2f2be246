// The battery, in run order. The degenerate-output check runs last so that its
// summary covers every reply of the run.
#include "check/checks_common.h"

namespace tern::check {

const char* OutcomeName(Outcome o) {
  switch (o) {
    case Outcome::kPass:
      return "pass";
    case Outcome::kFail:
      return "fail";
    case Outcome::kSkip:
      return "skip";
  }
  return "?";
}

const std::vector<CheckSpec>& AllChecks() {
  static const std::vector<CheckSpec> kChecks = {
      {"model_info", "model info", "structural", true, RunModelInfo},
      {"simple_completion", "simple completion", "semantic", true, RunSimpleCompletion},
      {"arithmetic_no_thinking", "arithmetic without thinking", "semantic", true, RunArithmeticNoThinking},
      {"arithmetic_thinking", "arithmetic with thinking", "semantic", true, RunArithmeticThinking},
      {"determinism", "greedy determinism", "structural", false, RunDeterminism},
      {"stream_consistency", "stream equals non-stream", "structural", false, RunStreamConsistency},
      {"multi_turn_recall", "multi-turn recall", "semantic", false, RunMultiTurnRecall},
      {"tool_calling", "tool calling", "semantic", false, RunToolCalling},
      {"long_context", "long-context retrieval", "semantic", false, RunLongContext},
      {"concurrency", "concurrency", "structural", false, RunConcurrency},
      {"error_handling", "error handling", "structural", false, RunErrorHandling},
      {"latency", "latency summary", "structural", false, RunLatency},
      {"special_tokens", "no special tokens in replies", "structural", false, RunSpecialTokens},
      {"openai_error_body", "errors readable by OpenAI clients", "structural", false, RunOpenAiErrorBody},
      {"stop_trimmed", "stop strings trimmed", "structural", false, RunStopTrimmed},
      {"degenerate_output", "degenerate output", "semantic", false, RunDegenerateOutput},
      {"numerics", "numerics against a reference", "numerics", false, nullptr, /*full=*/false, RunNumerics},
  };
  return kChecks;
}

}  // namespace tern::check
