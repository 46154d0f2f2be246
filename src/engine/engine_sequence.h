// Engine internals shared by its source files (engine.cc, engine_speculative.cc):
// a request's sequence as the engine thread tracks it. Not an interface.
#pragma once

#include <algorithm>
#include <chrono>
#include <memory>
#include <vector>

#include "engine/engine.h"
#include "grammar/matcher.h"

namespace tern {

// The choices of one n > 1 request: followers wait until the leader's prompt is cached.
struct Engine::Group {
  bool prompt_ready = false;
};

struct Engine::Sequence {
  EngineRequest req;
  std::shared_ptr<RequestStream> stream;
  std::vector<int32_t> tokens;  // prompt + generated: the context whose KV must be cached
  int64_t num_prompt = 0;
  int64_t num_cached = 0;  // leading tokens whose KV is in the cache
  std::vector<int32_t> blocks;
  int32_t state_slot = -1;  // recurrent-state slot while running (hybrid models)
  // Hybrid prefix cache: the second slot holds the state at boundary_pos (a
  // block boundary, -1: none yet); snapshot_pos is the deepest position whose
  // snapshot this sequence resumed from or published (-1: none).
  // branch_pos: where its prompt leaves a cached KV path that has no snapshot
  // there (another request's prompt continued or diverged: a shared prefix,
  // such as a system prompt); it publishes one there so later requests resume.
  int32_t boundary_slot = -1;
  int64_t boundary_pos = -1, snapshot_pos = -1, branch_pos = -1;
  // Speculative decoding: this step's verify chunk (the uncached tokens, then
  // `drafts` proposed ones) and, on hybrid models, the slot keeping the state
  // from before it (restored when a draft is rejected).
  std::vector<int32_t> verify;
  int64_t drafts = 0;
  int32_t spec_slot = -1;
  // StateRollback::kPerToken instead: the slots the verify forward writes the
  // state after each kept-prefix length into (SequenceChunk::step_state_slots):
  // step_slots[j] holds it with j drafts kept.
  std::vector<int32_t> step_slots;
  // Draft budget (engine_speculative.cc): drafts to propose next (-1: the
  // configured number), and decode steps to sit out after verifies that kept
  // nothing (backoff doubles each time: spec_backoff).
  int64_t spec_k = -1, spec_skip = 0, spec_backoff = 1;
  // NEXTN: the MTP head's drafts for the tokens after tokens[0, mtp_drafts_for)
  // (stale once the sequence has other tokens).
  std::vector<int32_t> mtp_drafts;
  int64_t mtp_drafts_for = -1;
  PrefixCache::Cursor cursor;  // how many of `blocks` are prefix-cache nodes
  int64_t cached_prompt = -1;  // prompt tokens found in the prefix cache at first admission; -1 before
  std::shared_ptr<Group> group;
  bool leader = false;
  Sampler sampler;
  std::chrono::steady_clock::time_point arrival, last_token;
  bool has_first = false;
  bool finished = false;  // FinishSequence ran (it may still sit in running_ until the step ends)
  // Structured output: the matcher has seen every generated token since the
  // grammar started, so it survives retraction (the sequence keeps its tokens
  // and the recompute only rebuilds their KV).
  std::unique_ptr<grammar::GrammarMatcher> matcher;
  bool grammar_active = false;
  // Prompt logprobs: the prompt position whose logprob is streamed next
  // (num_prompt: none left). Rows before it are never needed again, so a
  // retracted sequence resumes from the cache up to next_prompt_lp - 1.
  int64_t next_prompt_lp = 0;

  explicit Sequence(EngineRequest r) : req(std::move(r)), sampler(req.sampling) {
    if (req.grammar) {
      matcher = std::make_unique<grammar::GrammarMatcher>(req.grammar, req.stop_token_ids);
      grammar_active = req.grammar_after.empty();
    }
  }
  // After a token: starts the grammar once the output ends with grammar_after.
  void MaybeStartGrammar() {
    const auto& after = req.grammar_after;
    if (!matcher || grammar_active || generated() < int64_t(after.size())) return;
    grammar_active = std::equal(after.begin(), after.end(), tokens.end() - std::ptrdiff_t(after.size()));
  }
  int64_t generated() const { return int64_t(tokens.size()) - num_prompt; }
  int64_t uncached() const { return int64_t(tokens.size()) - num_cached; }
  int64_t cached_tokens() const { return std::max<int64_t>(cached_prompt, 0); }
  bool waits_for_leader() const { return group && !leader && !group->prompt_ready; }
  // The reply's last token, or -1 before the first.
  int32_t last_generated() const { return int64_t(tokens.size()) > num_prompt ? tokens.back() : -1; }
  bool wants_prompt_logits() const { return next_prompt_lp < num_prompt; }
};

}  // namespace tern
