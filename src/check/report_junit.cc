#include <fmt/format.h>

#include "check/json_text.h"
#include "check/report.h"

namespace tern::check {

std::string XmlEscape(std::string_view text) {
  std::string repaired;
  RepairUtf8(text, &repaired);
  std::string out;
  out.reserve(repaired.size());
  for (size_t i = 0; i < repaired.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(repaired[i]);
    switch (c) {
      case '&':
        out += "&amp;";
        continue;
      case '<':
        out += "&lt;";
        continue;
      case '>':
        out += "&gt;";
        continue;
      case '"':
        out += "&quot;";
        continue;
      case '\'':
        out += "&apos;";
        continue;
      case '\t':
        out += "&#9;";
        continue;
      case '\n':
        out += "&#10;";
        continue;
      case '\r':
        out += "&#13;";
        continue;
      default:
        break;
    }
    if (c < 0x20 || c == 0x7F) {
      out += "\xEF\xBF\xBD";
      continue;
    }
    // U+FFFE and U+FFFF (EF BF BE, EF BF BF) are not XML characters.
    if (c == 0xEF && i + 2 < repaired.size() && static_cast<unsigned char>(repaired[i + 1]) == 0xBF &&
        (static_cast<unsigned char>(repaired[i + 2]) == 0xBE || static_cast<unsigned char>(repaired[i + 2]) == 0xBF)) {
      out += "\xEF\xBF\xBD";
      i += 2;
      continue;
    }
    out.push_back(static_cast<char>(c));
  }
  return out;
}

std::string ReportToJunit(const RunReport& report) {
  const int fail = report.Count(Outcome::kFail), skip = report.Count(Outcome::kSkip);
  const bool fatal = !report.fatal.empty();
  const size_t tests = fatal ? 1 : report.results.size();
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format(
      "<testsuites name=\"tern check\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" time=\"{:.3f}\">\n",
      tests, fail, fatal ? 1 : 0, skip, report.duration_s);
  out += fmt::format(
      "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" time=\"{:.3f}\" "
      "timestamp=\"{}\">\n",
      XmlEscape("tern check " + report.suite), tests, fail, fatal ? 1 : 0, skip, report.duration_s,
      XmlEscape(report.started_at));
  out += "    <properties>\n";
  auto prop = [&](const char* k, const std::string& v) {
    out += fmt::format("      <property name=\"{}\" value=\"{}\"/>\n", k, XmlEscape(v));
  };
  prop("url", report.url);
  prop("dialect", report.server.dialect);
  prop("model", report.server.model);
  if (report.server.context_length) prop("context_length", std::to_string(*report.server.context_length));
  out += "    </properties>\n";
  if (fatal) {
    out += fmt::format("    <testcase classname=\"tern.check\" name=\"server_ready\" time=\"{:.3f}\">\n",
                       report.duration_s);
    out += fmt::format("      <error message=\"{0}\" type=\"unreachable\">{0}</error>\n", XmlEscape(report.fatal));
    out += "    </testcase>\n";
  }
  for (const auto& r : report.results) {
    out += fmt::format("    <testcase classname=\"tern.check.{}\" name=\"{}\" time=\"{:.3f}\">\n", XmlEscape(r.kind),
                       XmlEscape(r.name), r.duration_s);
    const std::string d = XmlEscape(r.detail);
    if (r.outcome == Outcome::kFail)
      out += fmt::format("      <failure message=\"{0}\" type=\"fail\">{0}</failure>\n", d);
    if (r.outcome == Outcome::kSkip) out += fmt::format("      <skipped message=\"{}\"/>\n", d);
    out += fmt::format("      <system-out>{}</system-out>\n", d);
    out += "    </testcase>\n";
  }
  out += "  </testsuite>\n</testsuites>\n";
  return out;
}

}  // namespace tern::check
