// Reporters: the terminal table, the JSON report, the JUnit XML report.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "check/runner.h"

namespace tern::check {

// Table. Rows are printed as checks finish; colour only when `color`.
std::string TableHeader(const RunReport& report, bool color);
std::string TableRow(const CheckResult& r, bool color);
// The summary line(s) after the rows, or the fatal error.
std::string TableSummary(const RunReport& report, bool color);

// The JSON report (schema documented in report_json.cc).
nlohmann::json ReportToJson(const RunReport& report);
// JSON text with invalid UTF-8 replaced (never throws).
std::string ReportToJsonText(const RunReport& report);

// JUnit XML: one <testcase> per check; a run that never reached the server has
// one <testcase name="server_ready"> with an <error>.
std::string ReportToJunit(const RunReport& report);

// Text safe inside XML 1.0 attributes and elements: & < > " ' escaped, invalid
// UTF-8 and characters XML forbids (controls other than tab/newline/CR,
// U+FFFE, U+FFFF) replaced by U+FFFD.
std::string XmlEscape(std::string_view text);

// "85 ms", "1.23 s", "-" for 0.
std::string FormatLatency(double seconds);

}  // namespace tern::check
