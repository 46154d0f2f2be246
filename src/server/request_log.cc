#include "server/request_log.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>

#include <nlohmann/json.hpp>

namespace tern::server {
namespace {

using nlohmann::json;

// The first `chars` bytes of s, moved back to a UTF-8 character boundary.
std::string Cut(const std::string& s, size_t chars) {
  if (s.size() <= chars) return s;
  size_t n = chars;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n);
}

// For the text form: control characters, quotes and backslashes escaped,
// in double quotes, so a value never breaks the line.
std::string Quoted(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u == 0x7F) {
      out += fmt::format("\\x{:02x}", u);
    } else {
      out += c;
    }
  }
  return out + "\"";
}

bool NeedsQuotes(std::string_view s) {
  if (s.empty()) return true;
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7F || c == '"' || c == '\\') return true;
  }
  return false;
}

std::string Field(std::string_view s) { return NeedsQuotes(s) ? Quoted(s) : std::string(s); }

std::string IsoTime(std::chrono::system_clock::time_point t) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  const std::time_t secs = std::time_t(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour, tm.tm_min, tm.tm_sec, int(ms % 1000));
}

}  // namespace

std::optional<RequestLogFormat> ParseRequestLogFormat(std::string_view s) {
  if (s == "text") return RequestLogFormat::kText;
  if (s == "json") return RequestLogFormat::kJson;
  return std::nullopt;
}

size_t LoggedTextChars(const RequestLogOptions& o) {
  if (!o.log_requests || o.level < 2) return 0;
  return o.level >= 3 ? std::string::npos : kPartialTextChars;
}

std::string FormatRequestLog(const RequestLogLine& line, const RequestLogOptions& o) {
  const RequestRecord& r = line.record;
  const size_t text_chars = LoggedTextChars(o);
  const bool generation = r.prompt_tokens >= 0;
  if (o.format == RequestLogFormat::kJson) {
    json j = {{"time", IsoTime(line.time)},
              {"level", line.level},
              {"event", "request"},
              {"method", line.req.method},
              {"path", line.req.path},
              {"status", line.status},
              {"latency_ms", std::round(line.latency_ms * 10) / 10},
              {"request_id", r.request_id},
              {"remote_addr", line.req.remote_addr}};
    if (!r.response_id.empty()) j["response_id"] = r.response_id;
    if (generation) {
      j["prompt_tokens"] = r.prompt_tokens;
      j["completion_tokens"] = std::max<int64_t>(r.completion_tokens, 0);
    }
    if (r.client_gone) j["client_gone"] = true;
    if (LogsSampling(o) && !r.sampling_json.empty()) j["sampling"] = json::parse(r.sampling_json, nullptr, false);
    if (text_chars > 0 && generation) {
      j["prompt"] = Cut(r.prompt_text, text_chars);
      j["completion"] = Cut(r.completion_text, text_chars);
    }
    return j.dump(-1, ' ', false, json::error_handler_t::replace);
  }
  std::string out = fmt::format("{} {} {} {:.1f} ms id={}", Field(line.req.method), Field(line.req.path), line.status,
                                line.latency_ms, Field(r.request_id));
  if (!r.response_id.empty()) out += " response_id=" + Field(r.response_id);
  if (generation)
    out += fmt::format(" prompt_tokens={} completion_tokens={}", r.prompt_tokens,
                       std::max<int64_t>(r.completion_tokens, 0));
  if (r.client_gone) out += " client_gone";
  out += " remote=" + Field(line.req.remote_addr);
  if (LogsSampling(o) && !r.sampling_json.empty()) out += " sampling=" + r.sampling_json;
  if (text_chars > 0 && generation)
    out += " prompt=" + Quoted(Cut(r.prompt_text, text_chars)) +
           " completion=" + Quoted(Cut(r.completion_text, text_chars));
  return out;
}

std::string UsableRequestId(std::string_view id) {
  if (id.empty() || id.size() > 128) return "";
  for (char c : id)
    if (c <= 0x20 || c >= 0x7F || c == '"' || c == '\\') return "";
  return std::string(id);
}

bool IsProbePath(std::string_view path) {
  return path.rfind("/health", 0) == 0 || path == "/ping" || path == "/metrics";
}

}  // namespace tern::server
