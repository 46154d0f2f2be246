#include "check/runner.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <exception>

#include "check/checks_common.h"
#include "check/context.h"
#include "check/http_client.h"
#include "check/url.h"

namespace tern::check {
namespace {

std::string UtcNow() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

int RunReport::Count(Outcome o) const {
  int n = 0;
  for (const auto& r : results) n += r.outcome == o;
  return n;
}

Result<std::vector<const CheckSpec*>> SelectChecks(std::string_view suite) {
  const auto& all = AllChecks();
  std::vector<std::string> wanted, unknown;
  size_t start = 0;
  while (start <= suite.size()) {
    size_t end = suite.find(',', start);
    if (end == std::string_view::npos) end = suite.size();
    std::string name(suite.substr(start, end - start));
    while (!name.empty() && name.back() == ' ') name.pop_back();
    while (!name.empty() && name.front() == ' ') name.erase(0, 1);
    start = end + 1;
    if (name.empty()) continue;
    if (name == "smoke" || name == "full") {  // suites expand to their checks
      for (const auto& c : all)
        if (name == "full" ? c.full : c.smoke) wanted.push_back(c.name);
      continue;
    }
    bool known = false;
    for (const auto& c : all) known = known || name == c.name;
    (known ? wanted : unknown).push_back(name);
  }
  if (wanted.empty() || !unknown.empty()) {
    std::vector<std::string> names;
    for (const auto& c : all) names.push_back(c.name);
    return Status::Errorf(
        "{} in --suite '{}'; use smoke, full, or names from: {}",
        unknown.empty() ? std::string("no checks")
                        : fmt::format("unknown check{} '{}'", unknown.size() == 1 ? "" : "s", fmt::join(unknown, ",")),
        suite, fmt::join(names, ", "));
  }
  std::vector<const CheckSpec*> out;  // battery order, each once
  for (const auto& c : all)
    if (std::find(wanted.begin(), wanted.end(), c.name) != wanted.end()) out.push_back(&c);
  return out;
}

RunReport RunChecks(const CheckOptions& options, const RunCallbacks& cb) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  RunReport report;
  report.url = options.url;
  report.suite = options.suite;
  report.started_at = UtcNow();
  auto finish = [&](RunReport& r) -> RunReport {
    r.duration_s = std::chrono::duration<double>(Clock::now() - t0).count();
    return std::move(r);
  };
  auto checks = SelectChecks(options.suite);
  if (!checks.ok()) {
    report.fatal = checks.status().message();
    return finish(report);
  }
  for (const CheckSpec* spec : *checks)
    if (spec->run_rows == RunNumerics && options.numerics.reference.model_dir.empty() &&
        options.numerics.reference_url.empty()) {
      report.fatal = "--suite numerics needs a reference: --reference-model DIR (tern runs it in process) or "
                     "--reference-url URL (another deployment)";
      return finish(report);
    }
  auto url = ParseBaseUrl(options.url);
  if (!url.ok()) {
    report.fatal = url.status().message();
    return finish(report);
  }
  report.url = url->ToString();
  HttpClient http(HttpOptions{.url = *url,
                              .api_key = options.api_key,
                              .timeout_s = options.timeout_s,
                              .connect_timeout_s = std::min(10.0, options.timeout_s)});
  auto ready = WaitUntilReady(http, options.wait_s, cb.progress);
  if (!ready.ok()) {
    report.fatal = ready.status().message();
    return finish(report);
  }
  report.server = DiscoverServer(http, options.model);
  report.server.ready_endpoint = *ready;
  if (url->stripped_v1) report.server.notes.push_back("removed /v1 from the URL; endpoints are relative to the root");
  if (cb.on_start) cb.on_start(report);
  CheckContext ctx(options, http, report.server);
  for (const CheckSpec* spec : *checks) {
    if (cb.on_check_start) cb.on_check_start(*spec);
    ctx.SetCurrentCheck(spec->name);
    const auto c0 = Clock::now();
    std::vector<CheckResult> rows(1);
    try {
      if (spec->run_rows) rows = spec->run_rows(ctx);
      else rows[0] = spec->run(ctx);
    } catch (const std::exception& e) {  // a bug of ours must not hide the other checks' results
      rows.assign(1, CheckResult{});
      rows[0].outcome = Outcome::kFail;
      rows[0].detail = fmt::format("internal error in the check: {}", e.what());
    }
    const double took = std::chrono::duration<double>(Clock::now() - c0).count();
    for (CheckResult& r : rows) {
      if (!spec->run_rows || r.name.empty()) r.name = spec->name;
      r.title = r.name == spec->name ? spec->title : std::string(spec->title) + ": " + r.name;
      r.kind = spec->kind;
      if (r.name == spec->name) r.duration_s = took;  // rows of their own keep theirs
      if (cb.on_result) cb.on_result(r);
      report.results.push_back(std::move(r));
    }
  }
  for (auto& n : ctx.Notes()) report.server.notes.push_back(std::move(n));
  report.exit_code = report.Count(Outcome::kFail) > 0 ? kExitFailed : kExitPassed;
  return finish(report);
}

}  // namespace tern::check
