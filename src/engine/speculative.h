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

// kNextn: the model's own multi-token-prediction head drafts (Qwen3.5 /
// Qwen3-Next mtp.*, SGLang's NEXTN): after each forward the head runs over
// the rows kept (its KV cache filled for every position, prompt included),
// its argmax at the last row is the first draft, and num_steps - 1 more head
// steps on its own output extend the chain (EAGLE with top-k 1). Greedy
// drafts are deterministic given the sequence, so the acceptance rule above
// is exact for them too.
enum class SpeculativeAlgorithm { kNone, kNgram, kNextn };

// How a hybrid model's recurrent state (Gated DeltaNet) goes back to the last
// kept token when a verify rejects a draft. The state absorbs every row of
// the verify chunk, and unlike KV entries a later step cannot overwrite the
// wrong part: it must be restored.
//  - kRecompute: the state from before the verify is kept in one spare slot
//    per sequence and restored; the kept tokens are recomputed in the next
//    verify chunk (more rows per forward, one state copy per verify).
//  - kPerToken: the delta-rule layers write the state after each of the
//    chunk's last k tokens into k spare slots per sequence (k = the most
//    drafts); a rejection switches the sequence to the slot of the last kept
//    token (no recomputation, k state writes per verify and k slots of memory).
//    The default: 1.5-1.8x the speed of kRecompute on the bundled Qwen3.5
//    model (models/demo-qwen35/README.md), SGLang's choice too.
enum class StateRollback { kRecompute, kPerToken };

struct SpeculativeOptions {
  SpeculativeAlgorithm algorithm = SpeculativeAlgorithm::kNone;
  // NGRAM: drafts per verify forward (SGLang's --speculative-num-draft-tokens).
  // NEXTN: tokens per verify forward, the last accepted one and the drafts:
  // num_steps + 1 with top-k 1, as SGLang requires.
  int64_t num_draft_tokens = 4;
  // NEXTN: head steps per round, i.e. drafts per verify (--speculative-num-steps),
  // and the candidates per step (--speculative-eagle-topk; only 1, a chain).
  int64_t num_steps = 3;
  int64_t eagle_topk = 1;
  // N-gram drafting (prompt lookup): the longest suffix of the sequence, from
  // max_match down to min_match tokens, that occurred before in its prompt or
  // output proposes the tokens that followed its latest occurrence.
  int64_t ngram_min_match = 1, ngram_max_match = 12;
  // The per-sequence draft budget (engine_speculative.cc) follows acceptance;
  // false: always the full number (tests that need many verifies, and
  // measuring what drafting costs).
  bool adaptive_budget = true;
  // Hybrid models only (--speculative-state-rollback).
  StateRollback state_rollback = StateRollback::kPerToken;
  // NEXTN: the head drafts only among these token ids (SGLang's
  // --speculative-token-map, FR-Spec's "hot" vocabulary): its lm_head step
  // reads these rows of lm_head instead of all of them, the largest part of
  // a head step's bytes on a big-vocabulary model. Drafts outside the map are
  // never proposed; the output is unchanged either way. Empty: the whole
  // vocabulary.
  std::vector<int32_t> token_map;
};

// A token map's text: token ids as decimal integers separated by commas
// and/or whitespace, optionally inside one pair of brackets (a JSON array,
// or one id per line). Errors name the offending position; range and
// uniqueness against the model are checked where it is applied
// (Model::MakeDraftHead).
inline constexpr size_t kMaxTokenMapIds = size_t(1) << 24;
Result<std::vector<int32_t>> ParseTokenMap(std::string_view text);

// "NGRAM" -> kNgram and "NEXTN" -> kNextn (either all upper or all lower
// case). EAGLE / EAGLE3 (a separate draft model in SGLang) and anything else
// are errors naming the algorithms this build has.
Result<SpeculativeAlgorithm> ParseSpeculativeAlgorithm(std::string_view name);
// Checks the options' ranges; the message names the flag.
Status ValidateSpeculativeOptions(const SpeculativeOptions& o);
// The most drafts one verify forward carries.
inline int64_t MaxDrafts(const SpeculativeOptions& o) {
  return o.algorithm == SpeculativeAlgorithm::kNextn ? o.num_steps : o.num_draft_tokens;
}

// Prompt-lookup drafting over `tokens` (prompt + output so far): appends to
// `out` the max_drafts tokens that followed the latest earlier occurrence of
// the longest matching suffix (lengths max_match down to min_match), copied
// as LZ77 copies, overlapping: where that runs past the end, the drafts
// continue the period (the suffix [7] of ...7, 7 drafts 7, 7, 7, 7).
// Nothing when no suffix recurs. O(tokens x (max_match - min_match + 1))
// compares, from the end backwards.
void NgramDraft(std::span<const int32_t> tokens, int64_t min_match, int64_t max_match, int64_t max_drafts,
                std::vector<int32_t>& out);

}  // namespace tern
