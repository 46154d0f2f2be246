#include <fmt/format.h>

#include "check/json_text.h"
#include "check/report.h"

namespace tern::check {
namespace {

constexpr const char* kReset = "\x1b[0m";
constexpr const char* kBold = "\x1b[1m";

const char* ColorOf(Outcome o) {
  switch (o) {
    case Outcome::kPass:
      return "\x1b[32m";
    case Outcome::kFail:
      return "\x1b[31m";
    case Outcome::kSkip:
      return "\x1b[33m";
  }
  return "";
}

std::string Paint(std::string_view text, const char* color, bool on) {
  return on ? fmt::format("{}{}{}", color, text, kReset) : std::string(text);
}

std::string Clean(std::string_view s) {
  std::string repaired;
  RepairUtf8(s, &repaired);
  return Excerpt(repaired, 200);
}

}  // namespace

std::string FormatLatency(double s) {
  if (s <= 0) return "-";
  if (s < 1) return fmt::format("{:.0f} ms", s * 1e3);
  return fmt::format("{:.2f} s", s);
}

std::string TableHeader(const RunReport& report, bool color) {
  const ServerInfo& s = report.server;
  std::string out =
      fmt::format("tern check: {} ({}, model {}, suite {})\n", report.url, s.dialect, Clean(s.model), report.suite);
  out += Paint(fmt::format("{:<24} {:<6} {:>9} {:>7}  {}", "CHECK", "RESULT", "LATENCY", "TOKENS", "DETAIL"), kBold,
               color);
  out += "\n";
  return out;
}

std::string TableRow(const CheckResult& r, bool color) {
  std::string result = OutcomeName(r.outcome);
  for (char& c : result) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  // Pad before painting so that escape codes do not break the alignment.
  std::string padded = fmt::format("{:<6}", result);
  return fmt::format("{:<24} {} {:>9} {:>7}  {}\n", r.name, Paint(padded, ColorOf(r.outcome), color),
                     FormatLatency(r.latency_s), r.tokens ? fmt::format("{}", *r.tokens) : "-", Clean(r.detail));
}

std::string TableSummary(const RunReport& report, bool color) {
  if (!report.fatal.empty()) return Paint("tern check: " + report.fatal, ColorOf(Outcome::kFail), color) + "\n";
  const int pass = report.Count(Outcome::kPass), fail = report.Count(Outcome::kFail),
            skip = report.Count(Outcome::kSkip);
  std::string line = fmt::format("{} checks: {} passed, {} failed, {} skipped in {:.1f} s", report.results.size(), pass,
                                 fail, skip, report.duration_s);
  std::string out = Paint(line, fail ? ColorOf(Outcome::kFail) : ColorOf(Outcome::kPass), color) + "\n";
  // Say plainly what a pattern of failures means.
  int sem_fail = 0, sem_run = 0, struct_fail = 0, struct_pass = 0;
  for (const auto& r : report.results) {
    if (r.kind == "semantic" && r.outcome != Outcome::kSkip) ++sem_run;
    if (r.kind == "semantic" && r.outcome == Outcome::kFail) ++sem_fail;
    if (r.kind == "structural" && r.outcome == Outcome::kFail) ++struct_fail;
    if (r.kind == "structural" && r.outcome == Outcome::kPass) ++struct_pass;
  }
  // Most answers wrong while the server behaves: the weights or the kernels.
  if (sem_fail >= 2 && 2 * sem_fail >= sem_run && !struct_fail && struct_pass)
    out +=
        "The server behaves (every structural check passed) but the model answers wrongly: wrong or random "
        "weights, or a broken kernel/backend.\n";
  for (const auto& n : report.server.notes) out += "note: " + Clean(n) + "\n";
  return out;
}

}  // namespace tern::check
