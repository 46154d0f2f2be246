// Speculative decoding: a cheap drafter proposes the next few tokens of a
// decoding sequence, one forward of the model scores them all at once (the
// sequence's last token plus the drafts, a row of logits each), and the engine
// keeps the drafts the model would have produced itself (engine.cc,
// Engine::AcceptDrafts). Drafts never change the output: the tokens that come
// out are the model's own, sampled one row at a time. They can cost time (a
// verify forward of k + 1 rows costs more than a decode step), which is why
// each sequence's draft budget follows its acceptance (engine_speculative.cc).
//
// Acceptance. The drafters here are deterministic (a draft is one token, not
// a distribution), so speculative sampling reduces to: sample x from the row
// exactly as without speculation (penalties, top-k/p, grammar mask, seed),
// keep going while x equals the draft, stop at the first x that differs (x
// itself is kept: it is the model's token there). P(x = d) = p(d), and a
// rejected draft leaves x distributed as p without d, renormalised: the
// output distribution is the model's, and a seeded request draws the same
// random numbers in the same order, so it produces the same tokens.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"

namespace tern {

enum class SpeculativeAlgorithm { kNone, kNgram };

struct SpeculativeOptions {
  SpeculativeAlgorithm algorithm = SpeculativeAlgorithm::kNone;
  // Drafts per verify forward (SGLang's --speculative-num-draft-tokens).
  int64_t num_draft_tokens = 4;
  // N-gram drafting (prompt lookup): the longest suffix of the sequence, from
  // max_match down to min_match tokens, that occurred before in its prompt or
  // output proposes the tokens that followed its latest occurrence.
  int64_t ngram_min_match = 1, ngram_max_match = 12;
};

// "NGRAM" (also "ngram") -> kNgram; anything else an error naming the
// algorithms this build has.
Result<SpeculativeAlgorithm> ParseSpeculativeAlgorithm(std::string_view name);
// Checks the options' ranges; the message names the flag.
Status ValidateSpeculativeOptions(const SpeculativeOptions& o);

// Prompt-lookup drafting over `tokens` (prompt + output so far): appends to
// `out` at most max_drafts tokens that followed the latest earlier
// occurrence of the longest matching suffix (lengths max_match down to
// min_match). Nothing when no suffix recurs. O(tokens x (max_match -
// min_match + 1)) compares, from the end backwards.
void NgramDraft(std::span<const int32_t> tokens, int64_t min_match, int64_t max_match, int64_t max_drafts,
                std::vector<int32_t>& out);

}  // namespace tern
