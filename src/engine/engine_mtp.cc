// NEXTN speculative decoding: the model's MTP head drafts (Qwen3.5 /
// Qwen3-Next mtp.*, engine/speculative.h). After every forward the head runs
// over the rows each sequence keeps of it, so that its KV cache holds every
// position the main model's does (prompt chunks included); a sequence that
// sampled a token gets its drafts from the head's last row and a chain of
// head steps on the head's own output. Drafts cost time, never output: a
// failed head forward only means no drafts this round.
//
// Positions. The head's row at position p reads h_p (the main model's final
// hidden state there, what its lm_head read) and t_{p+1}, and predicts
// t_{p+2} (model/mtp.h). After a forward over chunk positions [start, start
// + n) and sampling, the kept rows are [start, end) with end = min(start +
// n, tokens - 1): every row whose next token is now known (a verify keeps
// its accepted drafts; rejected ones are gone from `tokens`). The last kept
// row predicts the token after the newly sampled one: the first draft.
// Chain step j (1 .. num_steps - 1) runs the head at position tokens - 2 + j
// on draft j - 1 and the head's own normed output of step j - 1 (EAGLE-style
// with top-k 1, as SGLang and vLLM chain MTP); its KV entries there are
// overwritten by the real ones once the verify has run.
//
// The prefix cache shares blocks with the head's entries in them. The entry
// at a cached prefix's last position was made with the token that followed
// it in the request that computed it, which a later request may not share:
// that one entry can be stale, which can only make a draft worse.
#include <algorithm>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>

#include "engine/engine.h"
#include "engine/engine_sequence.h"
#include "model/batch.h"

namespace tern {
namespace {
int32_t Argmax(const float* row, int64_t V) { return int32_t(std::max_element(row, row + V) - row); }
}  // namespace

void Engine::MtpRound(const std::vector<Sequence*>& seqs, const std::vector<SequenceChunk>& chunks,
                      const std::vector<int64_t>& tokens_before) {
  // V: the head's logits per row, the whole vocabulary or the draft head's ids (draft_id maps back).
  const DraftHead* draft = draft_head_.get();
  const int64_t H = model_.config().hidden_size,
                V = draft == nullptr ? model_.config().vocab_size : int64_t(draft->ids.size());
  const auto draft_id = [&](const float* row) {
    const int32_t i = Argmax(row, V);
    return draft == nullptr ? i : draft->ids[size_t(i)];
  };
  mtp_chunks_.clear();
  std::vector<Sequence*> drafting;  // in mtp_chunks_ order, those whose last row drafts
  std::vector<Sequence*> in_round;
  int64_t hidden_row = 0, rows = 0;
  for (size_t i = 0; i < seqs.size(); ++i) {
    Sequence* s = seqs[i];
    const int64_t start = chunks[i].start_pos, n = int64_t(chunks[i].tokens.size());
    const int64_t first = hidden_row;
    hidden_row += n;
    s->mtp_drafts.clear();
    s->mtp_drafts_for = -1;
    if (s->finished) continue;
    const int64_t end = std::min(start + n, int64_t(s->tokens.size()) - 1);
    if (end <= start) continue;
    // Drafts only for a sequence that sampled a token and will draft next
    // step (not during a pause of its draft budget): the others fill the
    // head's KV cache without its lm_head row or chain.
    const bool drafts = int64_t(s->tokens.size()) > tokens_before[i] && s->spec_skip == 0;
    float* dst = Scratch::Get(mtp_hidden_, (rows + end - start) * H) + rows * H;
    std::memcpy(dst, hidden_.data() + first * H, size_t((end - start) * H) * sizeof(float));
    rows += end - start;
    mtp_chunks_.push_back({.tokens = std::span<const int32_t>(s->tokens).subspan(size_t(start + 1), size_t(end - start)),
                           .start_pos = start,
                           .block_table = s->blocks,
                           .state_slot = s->state_slot,
                           .all_logits = false,
                           .skip_logits = !drafts});
    in_round.push_back(s);
    if (drafts) drafting.push_back(s);
  }
  if (mtp_chunks_.empty()) return;
  const auto fail = [&](const Status& st) {
    if (!mtp_error_logged_) fmt::print(stderr, "NEXTN: the MTP head failed, no drafts this round: {}\n", st.message());
    mtp_error_logged_ = true;
    for (Sequence* s : drafting) s->mtp_drafts.clear();
  };
  if (Status st = model_.MtpForward(mtp_chunks_, std::span<const float>(mtp_hidden_.data(), size_t(rows * H)), *cache_,
                                    mtp_logits_, 0, &mtp_last_, draft);
      !st.ok())
    return fail(st);
  if (mtp_logits_.size() != drafting.size() * size_t(V))
    return fail(Status::Errorf("{} head logits for {} rows of {}", mtp_logits_.size(), drafting.size(), V));
  // The drafting sequences' normed last rows, in `drafting` order.
  std::vector<float> last(drafting.size() * size_t(H));
  for (size_t c = 0, d = 0; c < in_round.size(); ++c) {
    if (d == drafting.size() || in_round[c] != drafting[d]) continue;
    Sequence* s = drafting[d];
    s->mtp_drafts = {draft_id(mtp_logits_.data() + int64_t(d) * V)};
    s->mtp_drafts_for = int64_t(s->tokens.size());
    std::memcpy(last.data() + d * size_t(H), mtp_last_.data() + c * size_t(H), size_t(H) * sizeof(float));
    ++d;
  }
  // The chain: one batched head step per further draft, for the sequences
  // whose budget wants more and that have blocks for the position (only from
  // what no running sequence needs, as Draft takes them).
  for (int64_t step = 1; step < opts_.speculative.num_steps && !drafting.empty(); ++step) {
    mtp_chunks_.clear();
    std::vector<Sequence*> next;
    int64_t r = 0;
    for (size_t d = 0; d < drafting.size(); ++d) {
      Sequence* s = drafting[d];
      const int64_t budget = s->spec_k < 0 ? MaxDrafts(opts_.speculative) : s->spec_k;
      if (step >= budget) continue;
      const int64_t pos = int64_t(s->tokens.size()) - 2 + step;
      const int64_t need = BlocksFor(pos + 1, opts_.kv.block_size) - int64_t(s->blocks.size());
      if (need > 0 && (prefix_.available() - need < int64_t(running_.size()) || !EnsureBlocks(*s, pos + 1))) continue;
      float* dst = Scratch::Get(mtp_hidden_, (r + 1) * H) + r * H;
      std::memcpy(dst, last.data() + d * size_t(H), size_t(H) * sizeof(float));
      ++r;
      mtp_chunks_.push_back({.tokens = std::span<const int32_t>(s->mtp_drafts).subspan(size_t(step - 1), 1),
                             .start_pos = pos,
                             .block_table = s->blocks,
                             .state_slot = s->state_slot,
                             .all_logits = false,
                             .skip_logits = false});
      next.push_back(s);
    }
    if (next.empty()) break;
    if (Status st = model_.MtpForward(mtp_chunks_, std::span<const float>(mtp_hidden_.data(), size_t(r * H)), *cache_,
                                      mtp_logits_, step, &mtp_last_, draft);
        !st.ok() || mtp_logits_.size() != next.size() * size_t(V)) {
      if (st.ok()) st = Status::Errorf("{} head logits for {} rows of {}", mtp_logits_.size(), next.size(), V);
      if (!mtp_error_logged_) fmt::print(stderr, "NEXTN: a chained MTP step failed: {}\n", st.message());
      mtp_error_logged_ = true;
      return;  // (the drafts so far stand)
    }
    last.assign(mtp_last_.begin(), mtp_last_.begin() + r * H);
    for (size_t d = 0; d < next.size(); ++d) next[d]->mtp_drafts.push_back(draft_id(mtp_logits_.data() + int64_t(d) * V));
    drafting = std::move(next);
  }
}

}  // namespace tern
