// Speculative decoding in the engine: drafting for a decoder and accepting
// what the verify forward agrees with (engine/speculative.h says why the
// output is the model's own). The cache after a verify of chunk [uncached u
// tokens, k drafts] with a accepted:
//  - KV: positions up to start + u + a hold real tokens; num_cached moves
//    there, and the rejected drafts' KV past it is overwritten later.
//  - Recurrent state (hybrid models): it has absorbed every draft, so unless
//    all k were accepted the state from before the forward is restored from
//    the sequence's spec slot and num_cached goes back to the chunk's start:
//    the next step recomputes those u + a + 1 tokens in its verify chunk,
//    which on a weight-bound CPU decode costs about what one token does.
//    With StateRollback::kPerToken the verify forward also wrote the state
//    after each kept-prefix length into the sequence's step slots: the slot
//    of a accepted drafts becomes the live one and nothing is recomputed.
#include <algorithm>

#include "engine/engine.h"
#include "engine/engine_sequence.h"

namespace tern {

int64_t Engine::Draft(Sequence& s) {
  s.verify.clear();
  s.drafts = 0;
  const int64_t u = s.uncached();
  // Every kept draft becomes an output token: none past max_tokens or the context.
  const int64_t room = std::min(s.req.max_tokens - s.generated() - 1,
                                opts_.context_length - int64_t(s.tokens.size()) - 1);
  if (s.spec_k < 0) s.spec_k = MaxDrafts(opts_.speculative);
  if (s.spec_skip > 0) {  // recent drafts were all wrong: plain decode steps for a while
    --s.spec_skip;
    return u;
  }
  const int64_t k = std::min(s.spec_k, room);
  if (k <= 0) return u;
  draft_.clear();
  if (nextn()) {
    if (s.mtp_drafts_for == int64_t(s.tokens.size()))
      draft_.assign(s.mtp_drafts.begin(), s.mtp_drafts.begin() + std::min<int64_t>(k, int64_t(s.mtp_drafts.size())));
  } else {
    NgramDraft(s.tokens, opts_.speculative.ngram_min_match, opts_.speculative.ngram_max_match, k, draft_);
  }
  if (draft_.empty()) return u;
  // Blocks for the drafts, only from what no running sequence needs (a draft
  // never makes another sequence wait or be retracted).
  const int64_t end = s.num_cached + u + int64_t(draft_.size());
  const int64_t need = BlocksFor(end, opts_.kv.block_size) - int64_t(s.blocks.size());
  if (need > 0 && (prefix_.available() - need < int64_t(running_.size()) || !EnsureBlocks(s, end))) return u;
  if (opts_.on_drafts) opts_.on_drafts(s.req.id, int64_t(s.tokens.size()), draft_);
  s.verify.assign(s.tokens.begin() + s.num_cached, s.tokens.end());
  s.verify.insert(s.verify.end(), draft_.begin(), draft_.end());
  s.drafts = int64_t(draft_.size());
  return u + s.drafts;
}

bool Engine::AcceptDrafts(Sequence& s, float* rows, std::chrono::steady_clock::time_point now,
                          int64_t& produced) {
  const int64_t V = model_.config().vocab_size;
  const int64_t k = s.drafts, u = int64_t(s.verify.size()) - k, start = s.num_cached;
  metrics_.spec_verifies_total++;
  metrics_.spec_draft_tokens_total += uint64_t(k);
  // Row u - 1 + j predicts the token after chunk position u - 1 + j, i.e.
  // after the real tokens and drafts 0..j-1: valid while those were all kept.
  int64_t accepted = 0;
  bool finished = false;
  for (int64_t j = 0; j <= k; ++j) {
    std::span<float> row(rows + (u - 1 + j) * V, size_t(V));  // (the sampler edits it in place)
    int32_t tok = -1;
    if (SampleAndEmit(s, row, now, produced, tok)) {
      finished = true;
      break;
    }
    if (j == k || tok != s.verify[size_t(u + j)]) break;
    ++accepted;
  }
  metrics_.spec_accepted_tokens_total += uint64_t(accepted);
  // The draft budget follows what the drafts earn: all kept, one more next
  // time (up to the configured number); none kept, half as many, and at one
  // draft a pause of 1, 2, 4 ... 32 plain steps (a verify costs more than a
  // decode step, most on small models, so drafting that never lands must stop).
  if (!opts_.speculative.adaptive_budget) {
    // (fixed: every decode step drafts the full number)
  } else if (accepted == k) {
    s.spec_k = std::min(s.spec_k + 1, MaxDrafts(opts_.speculative));
    s.spec_backoff = 1;
  } else if (accepted == 0) {
    if (s.spec_k > 1) {
      s.spec_k = std::max<int64_t>(1, s.spec_k / 2);
    } else {
      s.spec_skip = s.spec_backoff;
      s.spec_backoff = std::min<int64_t>(s.spec_backoff * 2, 32);
    }
  } else {
    s.spec_backoff = 1;
  }
  s.verify.clear();
  s.drafts = 0;
  if (finished) return true;  // (its blocks and slots are released already)
  if (!s.step_slots.empty()) {
    // Per-token checkpoints: step_slots[j] holds the state after the chunk's
    // real tokens and j drafts. A block boundary inside the kept range gets
    // its snapshot from the checkpoint there, as plain decode steps would have
    // taken it; then, unless every draft was kept (the live state is right),
    // the sequence's live slot and the checkpoint of what was kept swap.
    const int64_t bs = opts_.kv.block_size;
    if (snapshots())
      for (int64_t j = 0; j < accepted; ++j)
        if (const int64_t pos = start + u + j; pos % bs == 0) {
          std::swap(s.state_slot, s.step_slots[size_t(j)]);
          s.num_cached = pos;
          prefix_.Insert(s.tokens, pos, s.blocks, s.cursor);
          AfterChunk(s);
          std::swap(s.state_slot, s.step_slots[size_t(j)]);
        }
    if (accepted < k) std::swap(s.state_slot, s.step_slots[size_t(accepted)]);
    s.num_cached = start + u + accepted;
  } else if (s.spec_slot >= 0 && accepted < k) {
    cache_->CopyState(s.spec_slot, s.state_slot);
    s.num_cached = start;
  } else {
    s.num_cached = start + u + accepted;
  }
  prefix_.Insert(s.tokens, s.num_cached, s.blocks, s.cursor);
  if (snapshots()) AfterChunk(s);
  // A leader whose first steps are verifies (its prompt found cached up to the
  // last token, and drafts from the prompt at once) releases its followers as
  // a plain step would, once its prompt is in the cache.
  if (s.group && s.leader && s.num_cached >= s.num_prompt) s.group->prompt_ready = true;
  return false;
}

}  // namespace tern
