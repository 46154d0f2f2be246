// Reading JSON that servers actually send, which is not always JSON.
//
// Python's json module writes NaN, Infinity and -Infinity as bare words (a
// broken FP4 kernel makes logprobs NaN, and the server happily serializes
// them); a broken detokenizer sends invalid UTF-8 or lone surrogate escapes.
// nlohmann::json rejects all of these, so the response would be lost exactly
// when it matters most. SanitizeJson turns them into parseable JSON and counts
// what it changed, so the degenerate-output check can report it.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace tern::check {

struct SanitizedJson {
  std::string text;      // parseable JSON text (if the input was JSON at all)
  int nonfinite = 0;     // NaN / Infinity / -Infinity / nan / inf words replaced by null
  int invalid_utf8 = 0;  // invalid UTF-8 sequences and lone surrogate escapes replaced by U+FFFD
};

// Outside strings: NaN, -NaN, Infinity, -Infinity, nan, -nan, inf, -inf -> null.
// Everywhere: each maximal invalid UTF-8 sequence -> U+FFFD; inside strings a
// \uD800-\uDFFF escape that is not a proper pair -> \ufffd.
SanitizedJson SanitizeJson(std::string_view raw);

// Sanitizes and parses; nullopt when the text is still not JSON. Never throws.
// Replies nesting deeper than kMaxReplyNesting are refused (nullopt), as if not JSON.
inline constexpr int kMaxReplyNesting = 512;
std::optional<nlohmann::json> ParseJsonLenient(std::string_view raw, SanitizedJson* info = nullptr);

// Replaces invalid UTF-8 with U+FFFD; returns the number of replacements.
int RepairUtf8(std::string_view in, std::string* out);

// Crash-proof accessors: nullopt when the key is missing or has another type.
std::optional<std::string> JsonString(const nlohmann::json& obj, const char* key);
std::optional<int64_t> JsonInt(const nlohmann::json& obj, const char* key);
std::optional<int64_t> JsonInt(const nlohmann::json& value);  // the value itself
std::optional<double> JsonNumber(const nlohmann::json& obj, const char* key);
// obj[key] when obj is an object holding key, else a null json.
const nlohmann::json& JsonField(const nlohmann::json& obj, const char* key);

// At most `max` bytes of text, cut at a UTF-8 boundary, newlines shown as \n, with "..." when cut.
std::string Excerpt(std::string_view text, size_t max = 80);

}  // namespace tern::check
