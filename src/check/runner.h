// RunChecks: wait for the server, learn what it is, run the selected checks.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "check/check.h"
#include "check/options.h"
#include "check/server.h"

namespace tern::check {

// Exit codes of `tern check`.
inline constexpr int kExitPassed = 0;
inline constexpr int kExitFailed = 1;       // a check failed
inline constexpr int kExitUnreachable = 2;  // no server, never ready, or bad options

struct RunReport {
  std::string url;
  std::string suite;
  std::string started_at;  // UTC, ISO 8601
  double duration_s = 0;
  ServerInfo server;
  std::vector<CheckResult> results;
  std::string fatal;  // set when no check could run (exit 2)
  int exit_code = kExitUnreachable;

  int Count(Outcome o) const;
};

struct RunCallbacks {
  std::function<void(std::string_view line)> progress;    // readiness polling
  std::function<void(const RunReport& report)> on_start;  // server known, checks about to run
  std::function<void(const CheckSpec& spec)> on_check_start;
  std::function<void(const CheckResult& result)> on_result;
};

// The checks named by a suite: "smoke", "full", or names separated by commas
// (in battery order). Unknown names are an error listing the known ones.
Result<std::vector<const CheckSpec*>> SelectChecks(std::string_view suite);

// Never throws. report.exit_code: 0 all passed (skips allowed), 1 a check
// failed, 2 the server was unreachable or never ready, or the options were bad.
RunReport RunChecks(const CheckOptions& options, const RunCallbacks& callbacks = {});

}  // namespace tern::check
