// The server's own lines on stderr, by --log-level: debug < info < warning <
// error. Lines below the level are dropped; errors always print. Prompt text
// is never logged, except in request logs when asked for (request_log.h).
#pragma once

#include <atomic>
#include <cstdio>
#include <optional>
#include <string_view>
#include <utility>

#include <fmt/format.h>

namespace tern::server {

enum class LogLevel { kDebug, kInfo, kWarning, kError };

inline std::optional<LogLevel> ParseLogLevel(std::string_view s) {
  if (s == "debug") return LogLevel::kDebug;
  if (s == "info") return LogLevel::kInfo;
  if (s == "warning" || s == "warn") return LogLevel::kWarning;
  if (s == "error") return LogLevel::kError;
  return std::nullopt;
}

inline std::atomic<LogLevel>& CurrentLogLevel() {
  static std::atomic<LogLevel> level{LogLevel::kInfo};
  return level;
}

// `line` as it is, without the "tern serve: " prefix (JSON request logs), by the same rule.
inline void LogLine(LogLevel level, std::string_view line) {
  if (level < CurrentLogLevel().load() && level != LogLevel::kError) return;
  fmt::print(stderr, "{}\n", line);
}

template <typename... Args>
void Log(LogLevel level, fmt::format_string<Args...> format, Args&&... args) {
  if (level < CurrentLogLevel().load() && level != LogLevel::kError) return;
  const char* tag = level == LogLevel::kWarning ? "warning: " : level == LogLevel::kError ? "error: " : "";
  fmt::print(stderr, "tern serve: {}{}\n", tag, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace tern::server
