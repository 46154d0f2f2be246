// Degenerate-output detection: what broken kernels produce.
//
// A misbehaving FP4/FP8 GEMM or attention backend does not crash; the server
// stays healthy and answers with NaN logprobs, "!!!!!!!!" or "++++++++" runs,
// one token repeated to the length limit, nothing at all, or bytes that are not
// UTF-8. Every response a check receives is scanned with FindDegenerate.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "check/chat.h"

namespace tern::check {

// Thresholds, chosen so that ordinary prose, code and Markdown pass (see
// degenerate_test.cc for the cases on both sides of each line).
struct DegenerateLimits {
  int char_run = 16;             // one non-space character repeated this often in a row
  int rule_char_run = 64;        // the same for - = _ * . ~ # (Markdown rules, tables)
  int token_run = 12;            // one logprob token repeated this often in a row
  int pattern_repeats = 8;       // a 2..10-byte pattern repeated this often in a row ...
  int pattern_min_bytes = 32;    // ... covering at least this many bytes
  double dominant_share = 0.75;  // one punctuation character is this share of the text ...
  int dominant_min_chars = 4;    // ... of at least this many non-space characters
};

// Problems found in one reply's text, in words ("run of 32 '!'"); empty when clean.
std::vector<std::string> FindDegenerateText(std::string_view text, const DegenerateLimits& limits = {});

// All problems of a reply: non-finite numbers in the JSON, NaN/infinite or
// positive logprobs, repeated tokens, empty output (no content, reasoning or
// tool call), invalid UTF-8, U+FFFD replacement characters, and the text rules.
std::vector<std::string> FindDegenerate(const ChatResult& r, const DegenerateLimits& limits = {});

// Joins findings into one line: "run of 32 '!'; 3 NaN logprobs".
std::string JoinFindings(const std::vector<std::string>& findings);

}  // namespace tern::check
