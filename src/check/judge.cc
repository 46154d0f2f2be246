#include "check/judge.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "check/degenerate.h"
#include "check/json_text.h"

namespace tern::check {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsAlnum(char c) { return IsDigit(c) || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z'); }

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

bool Blank(const std::optional<std::string>& s) { return !s || s->find_first_not_of(" \n\r\t") == std::string::npos; }

std::string FormatNumber(double v) {
  return v == std::floor(v) && std::abs(v) < 1e15 ? fmt::format("{}", static_cast<int64_t>(v)) : fmt::format("{}", v);
}

std::string Quote(const std::optional<std::string>& s) {
  return s ? fmt::format("'{}'", Excerpt(*s, 60)) : std::string("null");
}

}  // namespace

std::vector<double> NumbersIn(std::string_view text) {
  std::vector<double> out;
  for (size_t i = 0; i < text.size();) {
    if (!IsDigit(text[i])) {
      ++i;
      continue;
    }
    size_t start = i;
    std::string digits;
    while (i < text.size()) {
      if (IsDigit(text[i])) {
        digits.push_back(text[i++]);
      } else if (text[i] == ',' && i + 3 < text.size() && IsDigit(text[i + 1]) && IsDigit(text[i + 2]) &&
                 IsDigit(text[i + 3]) && (i + 4 >= text.size() || !IsDigit(text[i + 4]))) {
        i += 1;  // thousands separator: "1,234"
      } else {
        break;
      }
    }
    if (i + 1 < text.size() && text[i] == '.' && IsDigit(text[i + 1])) {
      digits.push_back('.');
      ++i;
      while (i < text.size() && IsDigit(text[i])) digits.push_back(text[i++]);
    }
    double v = std::strtod(digits.c_str(), nullptr);
    bool negative = start > 0 && text[start - 1] == '-' && (start < 2 || !IsAlnum(text[start - 2]));
    out.push_back(negative ? -v : v);
  }
  return out;
}

std::string Normalize(std::string_view text) {
  std::string out;
  for (char c : text)
    if (IsAlnum(c)) out.push_back(static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c));
  return out;
}

bool HasThinkTags(std::string_view text) {
  return text.find("<think>") != std::string_view::npos || text.find("</think>") != std::string_view::npos;
}

Verdict UsableReply(const ChatResult& r) {
  if (!r.ok()) return Verdict::Fail(r.failure);
  auto findings = FindDegenerate(r);
  if (!findings.empty())
    return Verdict::Fail(
        fmt::format("degenerate output: {}; reply '{}'", JoinFindings(findings), Excerpt(r.AllText(), 40)));
  return Verdict::Pass("");
}

Verdict JudgeExactOk(const ChatResult& r) {
  if (Verdict u = UsableReply(r); !u.pass) return u;
  if (Blank(r.content)) {
    if (!Blank(r.reasoning))
      return Verdict::Fail(
          fmt::format("content is {}; {} chars of reasoning came back instead (thinking not turned off?)",
                      r.content ? "empty" : "null", r.reasoning->size()));
    return Verdict::Fail(fmt::format("content is {}", r.content ? "empty" : "null"));
  }
  if (Normalize(*r.content) == "ok") return Verdict::Pass(fmt::format("reply {}", Quote(r.content)));
  if (HasThinkTags(*r.content))
    return Verdict::Fail(fmt::format("content holds a <think> block (reasoning not separated): {}", Quote(r.content)));
  return Verdict::Fail(fmt::format("expected 'OK', got {}", Quote(r.content)));
}

Verdict JudgeArithmeticNoThinking(const ChatResult& r, double expected) {
  if (Verdict u = UsableReply(r); !u.pass) return u;
  const std::string want = FormatNumber(expected);
  if (Blank(r.content)) {
    if (!Blank(r.reasoning))
      return Verdict::Fail(
          fmt::format("content is {} and the answer went to {} ({} chars): thinking was not turned off",
                      r.content ? "empty" : "null", r.reasoning_field, r.reasoning->size()));
    return Verdict::Fail(fmt::format("content is {}", r.content ? "empty" : "null"));
  }
  if (HasThinkTags(*r.content))
    return Verdict::Fail(
        fmt::format("content holds <think> tags: reasoning leaked into content: {}", Quote(r.content)));
  auto nums = NumbersIn(*r.content);
  if (std::find(nums.begin(), nums.end(), expected) == nums.end())
    return Verdict::Fail(fmt::format("no {} in the answer {}", want, Quote(r.content)));
  std::vector<std::string> others;
  for (double v : nums)
    if (v != expected) others.push_back(FormatNumber(v));
  if (!others.empty())
    return Verdict::Fail(
        fmt::format("answer holds other numbers besides {} ({}): {}", want, fmt::join(others, ", "), Quote(r.content)));
  if (!Blank(r.reasoning))
    return Verdict::Fail(fmt::format("answer {} is right, but {} chars of {} came back: thinking was not turned off",
                                     want, r.reasoning->size(), r.reasoning_field));
  return Verdict::Pass(fmt::format("answer {}", Quote(r.content)));
}

Verdict JudgeArithmeticThinking(const ChatResult& r, double expected) {
  if (Verdict u = UsableReply(r); !u.pass) return u;
  const std::string want = FormatNumber(expected);
  if (Blank(r.reasoning)) {
    if (r.content && HasThinkTags(*r.content))
      return Verdict::Fail("no separate reasoning: the <think> block came back inside content (no reasoning parser?)");
    return Verdict::Fail(
        "no reasoning came back (neither reasoning_content nor reasoning): thinking is off or not separated");
  }
  const size_t n = r.reasoning->size();
  if (Blank(r.content)) {
    std::string why =
        r.finish_reason == "length"
            ? "the reply hit max_tokens while still thinking"
            : "the final answer is missing (reasoning parser kept it, or the model never closed </think>)";
    return Verdict::Fail(
        fmt::format("content is {} after {} chars of {}: {}", r.content ? "empty" : "null", n, r.reasoning_field, why));
  }
  if (HasThinkTags(*r.content))
    return Verdict::Fail(fmt::format("content still holds <think> tags: {}", Quote(r.content)));
  auto nums = NumbersIn(*r.content);
  if (std::find(nums.begin(), nums.end(), expected) == nums.end())
    return Verdict::Fail(fmt::format("final content lacks {}: {}", want, Quote(r.content)));
  return Verdict::Pass(fmt::format("{} in content after {} chars of {}", want, n, r.reasoning_field));
}

Verdict JudgeContains(const ChatResult& r, std::string_view needle, std::string_view what) {
  if (Verdict u = UsableReply(r); !u.pass) return u;
  const std::string n = Lower(needle);
  if (Lower(r.ContentOr()).find(n) != std::string::npos)
    return Verdict::Pass(fmt::format("{} '{}' recalled", what, needle));
  if (r.reasoning && Lower(*r.reasoning).find(n) != std::string::npos)
    return Verdict::Fail(
        fmt::format("{} '{}' appears only in the reasoning, not in content {}", what, needle, Quote(r.content)));
  return Verdict::Fail(fmt::format("expected {} '{}', got {}", what, needle, Quote(r.content)));
}

Verdict JudgeSameText(const ChatResult& a, const ChatResult& b) {
  if (!a.ok()) return Verdict::Fail("first request: " + a.failure);
  if (!b.ok()) return Verdict::Fail("second request: " + b.failure);
  std::string ta = a.reasoning.value_or("") + "\x1f" + a.ContentOr();
  std::string tb = b.reasoning.value_or("") + "\x1f" + b.ContentOr();
  for (const auto& t : a.tool_calls) ta += "\x1f" + t.name + t.arguments;
  for (const auto& t : b.tool_calls) tb += "\x1f" + t.name + t.arguments;
  if (ta != tb) return Verdict::Fail("greedy replies differ: " + DescribeDifference(ta, tb));
  return Verdict::Pass(fmt::format("identical ({} bytes)", ta.size() - 1));
}

Verdict JudgeStreamMatches(const ChatResult& plain, const ChatResult& s) {
  if (!plain.ok()) return Verdict::Fail("non-streamed request: " + plain.failure);
  if (!s.ok()) return Verdict::Fail("streamed request: " + s.failure);
  if (!s.stream_error.empty()) return Verdict::Fail(s.stream_error);
  if (plain.ContentOr() != s.ContentOr())
    return Verdict::Fail("streamed content differs from non-streamed: " +
                         DescribeDifference(plain.ContentOr(), s.ContentOr()));
  if (plain.reasoning.value_or("") != s.reasoning.value_or(""))
    return Verdict::Fail("streamed reasoning differs from non-streamed: " +
                         DescribeDifference(plain.reasoning.value_or(""), s.reasoning.value_or("")));
  if (!plain.finish_reason.empty() && !s.finish_reason.empty() && plain.finish_reason != s.finish_reason)
    return Verdict::Fail(fmt::format("finish_reason '{}' streamed, '{}' not", s.finish_reason, plain.finish_reason));
  std::string usage = "no usage chunk";
  if (s.usage_seen) {
    if (s.completion_tokens && plain.completion_tokens && *s.completion_tokens != *plain.completion_tokens)
      return Verdict::Fail(fmt::format("usage chunk counts {} completion tokens, the non-streamed reply {}",
                                       *s.completion_tokens, *plain.completion_tokens));
    usage = s.completion_tokens ? fmt::format("usage chunk {} tokens", *s.completion_tokens) : "usage chunk";
  }
  return Verdict::Pass(fmt::format("same text, {} events, [DONE], {}", s.events, usage));
}

std::vector<std::string> ValidateSchema(const nlohmann::json& v, const nlohmann::json& schema,
                                        const std::string& where) {
  std::vector<std::string> errs;
  if (!schema.is_object()) return errs;
  if (auto type = JsonString(schema, "type")) {
    bool ok = (*type == "object" && v.is_object()) || (*type == "string" && v.is_string()) ||
              (*type == "number" && v.is_number()) || (*type == "boolean" && v.is_boolean()) ||
              (*type == "array" && v.is_array()) || (*type == "null" && v.is_null()) ||
              (*type == "integer" && (v.is_number_integer() || v.is_number_unsigned() ||
                                      (v.is_number_float() && v.get<double>() == std::floor(v.get<double>()))));
    if (!ok) {
      errs.push_back(fmt::format("{} should be {}, is {}", where, *type, Excerpt(v.dump(), 30)));
      return errs;
    }
  }
  const auto& en = JsonField(schema, "enum");
  if (en.is_array() && std::find(en.begin(), en.end(), v) == en.end())
    errs.push_back(fmt::format("{} = {} is not one of {}", where, Excerpt(v.dump(), 30), en.dump()));
  if (v.is_object()) {
    const auto& props = JsonField(schema, "properties");
    const auto& req = JsonField(schema, "required");
    if (req.is_array())
      for (const auto& k : req)
        if (k.is_string() && !v.contains(k.get<std::string>()))
          errs.push_back(fmt::format("{} lacks required '{}'", where, k.get<std::string>()));
    for (const auto& [k, sub] : v.items()) {
      if (props.is_object() && props.contains(k)) {
        for (auto& e : ValidateSchema(sub, props[k], where + "." + k)) errs.push_back(std::move(e));
      } else if (JsonField(schema, "additionalProperties").is_boolean() &&
                 !schema["additionalProperties"].get<bool>()) {
        errs.push_back(fmt::format("{} has unexpected property '{}'", where, k));
      }
    }
  }
  if (v.is_array()) {
    const auto& items = JsonField(schema, "items");
    for (size_t i = 0; i < v.size(); ++i)
      for (auto& e : ValidateSchema(v[i], items, fmt::format("{}[{}]", where, i))) errs.push_back(std::move(e));
  }
  return errs;
}

Verdict JudgeToolCall(const ChatResult& r, std::string_view function, const nlohmann::json& schema) {
  if (!r.ok()) return Verdict::Fail(r.failure);
  if (r.tool_calls.empty()) {
    const std::string c = r.ContentOr();
    if (c.find("<tool_call>") != std::string::npos || c.find(std::string(function)) != std::string::npos)
      return Verdict::Fail(
          fmt::format("the call came back in content, not tool_calls (no tool-call parser?): {}", Quote(r.content)));
    auto findings = FindDegenerate(r);
    if (!findings.empty()) return Verdict::Fail("no tool call; degenerate output: " + JoinFindings(findings));
    return Verdict::Fail(fmt::format("no tool call; content {}", Quote(r.content)));
  }
  for (const ToolCall& t : r.tool_calls) {
    if (t.name != function)
      return Verdict::Fail(fmt::format("called '{}', expected '{}'", Excerpt(t.name, 40), function));
    auto args = ParseJsonLenient(t.arguments);
    if (!args || !args->is_object())
      return Verdict::Fail(fmt::format("arguments are not a JSON object: '{}'", Excerpt(t.arguments, 60)));
    auto errs = ValidateSchema(*args, schema);
    if (!errs.empty()) return Verdict::Fail(fmt::format("arguments break the schema: {}", fmt::join(errs, "; ")));
    if (t.id.empty()) return Verdict::Fail("tool call has no id");
  }
  return Verdict::Pass(fmt::format("{}({})", function, Excerpt(r.tool_calls[0].arguments, 50)));
}

Verdict JudgeErrorReply(int status, std::string_view body) {
  if (status >= 200 && status < 300)
    return Verdict::Fail(fmt::format("HTTP {} for a malformed request (expected 4xx)", status));
  if (status >= 500)
    return Verdict::Fail(fmt::format("HTTP {} for a malformed request (expected 4xx): server error", status));
  if (status < 400) return Verdict::Fail(fmt::format("HTTP {} for a malformed request (expected 4xx)", status));
  ApiError e = ParseApiError(body);
  if (e.shape == "text" || e.shape == "empty")
    return Verdict::Fail(fmt::format("HTTP {} but the body is not a JSON error: '{}'", status, Excerpt(body, 50)));
  if (e.message.empty())
    return Verdict::Fail(fmt::format("HTTP {} with a {} JSON error but no message", status, e.shape));
  return Verdict::Pass(fmt::format("HTTP {}, {} error JSON", status, e.shape));
}

std::string DescribeDifference(std::string_view a, std::string_view b) {
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  size_t from = i > 10 ? i - 10 : 0;
  auto side = [&](std::string_view s) {
    return from >= s.size() ? std::string("(end)") : fmt::format("'{}'", Excerpt(s.substr(from), 30));
  };
  return fmt::format("at byte {}: {} vs {}", i, side(a), side(b));
}

}  // namespace tern::check
