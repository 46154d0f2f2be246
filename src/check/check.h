// One check of the battery: its result, and how it is registered.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace tern::check {

class CheckContext;

enum class Outcome { kPass, kFail, kSkip };
const char* OutcomeName(Outcome o);  // "pass", "fail", "skip"

struct CheckResult {
  std::string name;   // stable id: "simple_completion"
  std::string title;  // "simple completion"
  Outcome outcome = Outcome::kSkip;
  double latency_s = 0;           // of the check's main request (0: none)
  std::optional<int64_t> tokens;  // completion tokens of that request, when known
  std::string detail;             // one line
  // Kind of check: "semantic" (the model must answer right) or "structural"
  // (the server must behave right, whatever the weights).
  std::string kind;
  nlohmann::json metrics = nlohmann::json::object();  // extra numbers for the JSON report
  double duration_s = 0;                              // whole check, all requests
};

struct CheckSpec {
  const char* name;
  const char* title;
  const char* kind;  // "semantic", "structural", "numerics" or "info"
  bool smoke;        // part of the smoke suite
  CheckResult (*run)(CheckContext& ctx);
  bool full = true;  // part of the full suite (numerics needs a reference: by name only)
  // Instead of `run`: a check that reports several rows (numerics: one per
  // prompt, then the overall one); each row names itself.
  std::vector<CheckResult> (*run_rows)(CheckContext& ctx) = nullptr;
};

// All checks in run order.
const std::vector<CheckSpec>& AllChecks();

}  // namespace tern::check
