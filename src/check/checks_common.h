// Helpers shared by the checks_*.cc files.
#pragma once

#include <string>

#include "check/chat.h"
#include "check/check.h"
#include "check/context.h"
#include "check/judge.h"

namespace tern::check {

// A result from a verdict; latency and tokens from `main` (the check's main
// request) when given, and its notes (retries) appended to the detail.
CheckResult MakeResult(const Verdict& v, const ChatResult* main = nullptr);

// The check functions, registered in registry.cc.
CheckResult RunModelInfo(CheckContext& ctx);
CheckResult RunSimpleCompletion(CheckContext& ctx);
CheckResult RunArithmeticNoThinking(CheckContext& ctx);
CheckResult RunArithmeticThinking(CheckContext& ctx);
CheckResult RunDeterminism(CheckContext& ctx);
CheckResult RunStreamConsistency(CheckContext& ctx);
CheckResult RunConcurrency(CheckContext& ctx);
CheckResult RunMultiTurnRecall(CheckContext& ctx);
CheckResult RunLongContext(CheckContext& ctx);
CheckResult RunToolCalling(CheckContext& ctx);
CheckResult RunErrorHandling(CheckContext& ctx);
CheckResult RunLatency(CheckContext& ctx);
CheckResult RunDegenerateOutput(CheckContext& ctx);
// What real client libraries exposed (issue 24), checks_clients.cc.
CheckResult RunSpecialTokens(CheckContext& ctx);
CheckResult RunOpenAiErrorBody(CheckContext& ctx);
CheckResult RunStopTrimmed(CheckContext& ctx);
// The numerics suite against a reference (checks_numerics.cc): a row per prompt and one overall.
std::vector<CheckResult> RunNumerics(CheckContext& ctx);
// Their judgements: what special-token text or leftover tag a reply holds
// ("" when clean); whether an error body carries OpenAI's error.message; the
// stop string taken from a greedy reply ("" when none fits).
std::string SpecialTokenFinding(const ChatResult& r);
Verdict JudgeOpenAiErrorBody(int status, const std::string& body);
std::string StopStringFrom(const std::string& text);

// The long-context prompt: about `tokens` tokens of digit-free filler with the
// sentence "The access code for the blue vault is 58137." buried at 60% depth,
// then the question. Deterministic.
std::string BuildLongContextPrompt(int tokens);

// Prompts, shared with the tests' scripted server (testdata/mock_server.mjs
// matches on them; change both together).
namespace prompts {
inline constexpr const char* kOk = "Reply with exactly the word OK and nothing else.";
inline constexpr const char* kArithmetic = "What is 17 × 19? Reply with the number only.";
inline constexpr const char* kArithmeticThinking = "What is 17 × 19? Think it through, then give the final answer.";
inline constexpr double kArithmeticAnswer = 323;
inline constexpr const char* kSentence = "Write one sentence about the sea.";
inline constexpr const char* kColors = "Name the three primary colors of light, separated by commas.";
inline constexpr const char* kCodeWord = "MARIGOLD";
inline constexpr const char* kVaultCode = "58137";
inline constexpr const char* kOcean = "Write three sentences about the ocean.";
inline constexpr const char* kCount = "Count from one to twenty in words, separated by spaces.";
inline constexpr const char* kWeather = "What is the weather like in Paris right now? Use the get_weather tool.";
}  // namespace prompts

}  // namespace tern::check
