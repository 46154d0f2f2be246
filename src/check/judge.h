// Judgements: pure functions from replies to pass/fail with a one-line reason.
// Each check (checks_*.cc) sends requests, then asks one of these; they hold
// all the "is this answer right" logic so that it can be unit-tested on
// recorded and synthetic replies without a server.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "check/chat.h"

namespace tern::check {

struct Verdict {
  bool pass = false;
  std::string detail;  // one line; says why on failure, what was seen on success
  static Verdict Pass(std::string d) { return {true, std::move(d)}; }
  static Verdict Fail(std::string d) { return {false, std::move(d)}; }
};

// The numbers written in text with digits: "17 x 19 = 323.0" -> {17, 19, 323}.
// A decimal point joins digits ("3.5"); a trailing "." ends a sentence.
std::vector<double> NumbersIn(std::string_view text);

// Lower-cases ASCII and drops everything that is not a letter or digit:
// "**OK.**" -> "ok".
std::string Normalize(std::string_view text);

// Whether the text holds a <think> or </think> tag: reasoning left in content.
bool HasThinkTags(std::string_view text);

// Fails with the degenerate-output findings or the transport failure of r, if any.
// Returns a passing verdict (empty detail) when r is a usable, clean reply.
Verdict UsableReply(const ChatResult& r);

// "Reply with exactly OK": content is OK, case and punctuation aside.
Verdict JudgeExactOk(const ChatResult& r);

// 17 x 19 with thinking off: content holds `expected` and no other number, no
// reasoning came back, no <think> tags in content.
Verdict JudgeArithmeticNoThinking(const ChatResult& r, double expected);

// 17 x 19 with thinking on: reasoning came back in its own field, content is
// not null, holds `expected`, and has no <think> tags.
Verdict JudgeArithmeticThinking(const ChatResult& r, double expected);

// The reply contains `needle` (case-insensitive), for recall and retrieval.
Verdict JudgeContains(const ChatResult& r, std::string_view needle, std::string_view what);

// Two greedy replies to the same request have the same text.
Verdict JudgeSameText(const ChatResult& a, const ChatResult& b);

// A streamed reply equals the non-streamed one: same content (null and "" the
// same) and reasoning, [DONE] arrived, no error chunk, and a usage chunk (if
// any) counts the same completion tokens.
Verdict JudgeStreamMatches(const ChatResult& plain, const ChatResult& streamed);

// A tool-call reply: exactly the expected function, arguments a JSON object
// valid under `schema` (see ValidateSchema).
Verdict JudgeToolCall(const ChatResult& r, std::string_view function, const nlohmann::json& schema);

// Validates `value` against the JSON Schema subset that tool parameters use:
// type (object, string, number, integer, boolean, array, null), properties,
// required, enum, additionalProperties: false, items. Returns the violations.
std::vector<std::string> ValidateSchema(const nlohmann::json& value, const nlohmann::json& schema,
                                        const std::string& where = "arguments");

// A malformed request's reply: a 4xx status with a JSON error that has a message.
Verdict JudgeErrorReply(int status, std::string_view body);

// First position where two strings differ, with a short excerpt of each side.
std::string DescribeDifference(std::string_view a, std::string_view b);

}  // namespace tern::check
