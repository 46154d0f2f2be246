#include "app/mtp_tap.h"

#include <fmt/format.h>

namespace tern::app {

Status MtpTap::Forward(std::span<const SequenceChunk> batch, KvCache& cache, std::vector<float>& logits) {
  if (batch.size() != 1) return Status::Error("MTP tap: one sequence per forward");
  const SequenceChunk& c = batch[0];
  TERN_RETURN_IF_ERROR(inner_.ForwardWithHidden(batch, cache, logits, hidden_));
  cache_ = &cache;
  block_table_.assign(c.block_table.begin(), c.block_table.end());
  const int64_t H = config().hidden_size, n = int64_t(c.tokens.size());
  if (c.start_pos == 0) pending_pos_ = -1;  // a new sequence
  if (pending_pos_ >= 0 && pending_pos_ + 1 != c.start_pos)
    return Status::Errorf("MTP tap: chunk at position {} does not follow position {}", c.start_pos, pending_pos_);
  // Rows: the pending one (its next token is this chunk's first), then every
  // row of this chunk but the last (their next tokens are in the chunk).
  rows_.clear();
  tokens_.clear();
  int64_t first = c.start_pos;
  if (pending_pos_ >= 0) {
    rows_ = pending_;
    tokens_.push_back(c.tokens[0]);
    first = pending_pos_;
  }
  rows_.insert(rows_.end(), hidden_.begin(), hidden_.begin() + (n - 1) * H);
  tokens_.insert(tokens_.end(), c.tokens.begin() + 1, c.tokens.end());
  pending_.assign(hidden_.begin() + (n - 1) * H, hidden_.begin() + n * H);
  pending_pos_ = c.start_pos + n - 1;
  return RunHead(first);
}

Status MtpTap::OnToken(int32_t token) {
  if (pending_pos_ < 0) return Status::Error("MTP tap: a token arrived with no hidden state waiting for it");
  rows_ = pending_;
  tokens_.assign(1, token);
  const int64_t first = pending_pos_;
  pending_pos_ = -1;
  return RunHead(first);
}

Status MtpTap::RunHead(int64_t first) {
  const int64_t k = int64_t(tokens_.size()), V = config().vocab_size;
  if (k == 0) return Status::Ok();
  const bool keep = first + k - 1 >= record_from_;
  SequenceChunk m{.tokens = tokens_, .start_pos = first, .block_table = block_table_, .all_logits = keep,
                  .skip_logits = !keep};
  TERN_RETURN_IF_ERROR(inner_.MtpForward({&m, 1}, rows_, *cache_, head_logits_));
  if (!keep) return Status::Ok();
  for (int64_t r = 0; r < k; ++r)
    if (first + r >= record_from_)
      kept_.insert(kept_.end(), head_logits_.begin() + r * V, head_logits_.begin() + (r + 1) * V);
  return Status::Ok();
}

}  // namespace tern::app
