#include "check/degenerate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "check/json_text.h"

namespace tern::check {
namespace {

bool IsSpace(unsigned char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\f' || c == '\v'; }
bool IsRuleChar(char c) { return c == '-' || c == '=' || c == '_' || c == '*' || c == '.' || c == '~' || c == '#'; }
bool IsAlnum(unsigned char c) { return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z'); }

std::string Show(std::string_view s) { return Excerpt(s, 16); }

// Longest run of one byte that is not whitespace (only ASCII: a UTF-8 byte run
// would be a run of whole characters only for single-byte ones).
void CharRuns(std::string_view text, const DegenerateLimits& lim, std::vector<std::string>* out) {
  size_t best = 0;
  char best_c = 0;
  for (size_t i = 0; i < text.size();) {
    size_t j = i;
    while (j < text.size() && text[j] == text[i]) ++j;
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x80 && !IsSpace(c)) {
      size_t limit = IsRuleChar(text[i]) ? lim.rule_char_run : lim.char_run;
      if (j - i >= limit && j - i > best) {
        best = j - i;
        best_c = text[i];
      }
    }
    i = j;
  }
  if (best) out->push_back(fmt::format("run of {} '{}' characters", best, best_c));
}

// One punctuation character making up most of a short reply ("!!!!!!!!").
void Dominant(std::string_view text, const DegenerateLimits& lim, std::vector<std::string>* out) {
  std::map<char, int> counts;
  int total = 0;
  for (char ch : text) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (IsSpace(c)) continue;
    ++total;
    if (c < 0x80 && !IsAlnum(c)) ++counts[ch];
  }
  if (total < lim.dominant_min_chars) return;
  for (auto [c, n] : counts) {
    if (n >= lim.dominant_share * total) out->push_back(fmt::format("{} of {} characters are '{}'", n, total, c));
  }
}

// A short pattern ("the ", "ab") repeated back to back.
void Patterns(std::string_view text, const DegenerateLimits& lim, std::vector<std::string>* out) {
  for (size_t p = 2; p <= 10; ++p) {
    if (text.size() < p * lim.pattern_repeats) continue;
    size_t run = 0;  // bytes i with text[i] == text[i - p], consecutively
    for (size_t i = p; i < text.size(); ++i) {
      run = (text[i] == text[i - p]) ? run + 1 : 0;
      size_t covered = run + p;
      if (covered >= p * lim.pattern_repeats && covered >= static_cast<size_t>(lim.pattern_min_bytes)) {
        std::string_view pat = text.substr(i + 1 - covered, p);
        // A pattern of one repeated character is a character run (reported above);
        // whitespace-only patterns are indentation.
        bool all_same = pat.find_first_not_of(pat[0]) == std::string_view::npos;
        bool all_space =
            std::all_of(pat.begin(), pat.end(), [](char c) { return IsSpace(static_cast<unsigned char>(c)); });
        if (!all_same && !all_space) {
          // Extend to the end of this run for the message.
          size_t end = i + 1;
          while (end < text.size() && text[end] == text[end - p]) ++end;
          out->push_back(fmt::format("'{}' repeated {} times in a row", Show(pat), (end - (i + 1 - covered)) / p));
          return;
        }
      }
    }
  }
}

size_t CountReplacementChars(std::string_view text) {
  size_t n = 0;
  for (size_t i = 0; (i = text.find("\xEF\xBF\xBD", i)) != std::string_view::npos; i += 3) ++n;
  return n;
}

}  // namespace

std::vector<std::string> FindDegenerateText(std::string_view text, const DegenerateLimits& limits) {
  std::vector<std::string> out;
  CharRuns(text, limits, &out);
  Dominant(text, limits, &out);
  Patterns(text, limits, &out);
  return out;
}

std::vector<std::string> FindDegenerate(const ChatResult& r, const DegenerateLimits& limits) {
  std::vector<std::string> out;
  if (!r.ok()) return out;  // no reply to judge
  if (r.nonfinite_json > 0)
    out.push_back(fmt::format("{} non-finite number{} (NaN/Infinity) in the JSON", r.nonfinite_json,
                              r.nonfinite_json == 1 ? "" : "s"));
  int bad_lp = 0, positive_lp = 0;
  for (double lp : r.logprobs) {
    // vLLM clamps -inf to -9999.0; SGLang's orjson writes NaN as null (read as NaN).
    if (!std::isfinite(lp) || lp <= -9999.0)
      ++bad_lp;
    else if (lp > 1e-3)
      ++positive_lp;
  }
  if (bad_lp) out.push_back(fmt::format("{} of {} token logprobs are NaN or infinite", bad_lp, r.logprobs.size()));
  if (positive_lp) out.push_back(fmt::format("{} token logprobs are above 0", positive_lp));
  // One token repeated back to back.
  size_t run = 1, best = 0;
  std::string best_tok;
  for (size_t i = 1; i < r.tokens.size(); ++i) {
    run = (r.tokens[i] == r.tokens[i - 1]) ? run + 1 : 1;
    bool blank = r.tokens[i].find_first_not_of(" \n\t") == std::string::npos;
    if (!blank && run >= static_cast<size_t>(limits.token_run) && run > best) {
      best = run;
      best_tok = r.tokens[i];
    }
  }
  if (best) out.push_back(fmt::format("token '{}' repeated {} times in a row", Show(best_tok), best));
  const std::string text = r.AllText();
  if (text.find_first_not_of(" \n\r\t") == std::string::npos && r.tool_calls.empty())
    out.push_back("empty output (no content, reasoning or tool call)");
  if (r.invalid_utf8 > 0)
    out.push_back(fmt::format("{} invalid UTF-8 sequence{}", r.invalid_utf8, r.invalid_utf8 == 1 ? "" : "s"));
  size_t fffd = CountReplacementChars(text);
  // Replacements we made while repairing invalid UTF-8 are already counted.
  if (fffd > static_cast<size_t>(r.invalid_utf8))
    out.push_back(fmt::format("{} U+FFFD replacement characters", fffd - r.invalid_utf8));
  for (auto& f : FindDegenerateText(text, limits)) out.push_back(std::move(f));
  return out;
}

std::string JoinFindings(const std::vector<std::string>& findings) {
  std::string s;
  for (const auto& f : findings) s += (s.empty() ? "" : "; ") + f;
  return s;
}

}  // namespace tern::check
