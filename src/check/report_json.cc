// The JSON report:
// {"tool":"tern check","format":1,"url","suite","started_at","duration_s",
//  "exit_code", "fatal" (only when no check ran),
//  "server":{"dialect","owned_by","model","model_path","context_length"|null,
//            "info_endpoint","ready_endpoint","notes":[..]},
//  "summary":{"total","passed","failed","skipped"},
//  "checks":[{"name","title","kind","result":"pass|fail|skip","latency_ms"|null,
//             "tokens"|null,"duration_s","detail","metrics":{..}}]}
#include "check/report.h"

namespace tern::check {

nlohmann::json ReportToJson(const RunReport& report) {
  using nlohmann::json;
  const ServerInfo& s = report.server;
  json j = {{"tool", "tern check"},
            {"format", 1},
            {"url", report.url},
            {"suite", report.suite},
            {"started_at", report.started_at},
            {"duration_s", report.duration_s},
            {"exit_code", report.exit_code}};
  if (!report.fatal.empty()) j["fatal"] = report.fatal;
  j["server"] = {{"dialect", s.dialect},
                 {"owned_by", s.owned_by},
                 {"model", s.model},
                 {"model_path", s.model_path},
                 {"context_length", s.context_length ? json(*s.context_length) : json(nullptr)},
                 {"info_endpoint", s.info_endpoint},
                 {"ready_endpoint", s.ready_endpoint},
                 {"notes", s.notes}};
  j["summary"] = {{"total", report.results.size()},
                  {"passed", report.Count(Outcome::kPass)},
                  {"failed", report.Count(Outcome::kFail)},
                  {"skipped", report.Count(Outcome::kSkip)}};
  json checks = json::array();
  for (const auto& r : report.results) {
    checks.push_back({{"name", r.name},
                      {"title", r.title},
                      {"kind", r.kind},
                      {"result", OutcomeName(r.outcome)},
                      {"latency_ms", r.latency_s > 0 ? json(r.latency_s * 1e3) : json(nullptr)},
                      {"tokens", r.tokens ? json(*r.tokens) : json(nullptr)},
                      {"duration_s", r.duration_s},
                      {"detail", r.detail},
                      {"metrics", r.metrics}});
  }
  j["checks"] = std::move(checks);
  return j;
}

std::string ReportToJsonText(const RunReport& report) {
  return ReportToJson(report).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace tern::check
