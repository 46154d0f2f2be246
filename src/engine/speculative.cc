#include "engine/speculative.h"

#include <algorithm>

namespace tern {

Result<SpeculativeAlgorithm> ParseSpeculativeAlgorithm(std::string_view name) {
  if (name == "NGRAM" || name == "ngram") return SpeculativeAlgorithm::kNgram;
  return Status::Errorf(
      "--speculative-algorithm {}: not supported; this build has NGRAM (prompt lookup; NEXTN/EAGLE drafting with "
      "the MTP head is not built yet)",
      name);
}

Status ValidateSpeculativeOptions(const SpeculativeOptions& o) {
  if (o.algorithm == SpeculativeAlgorithm::kNone) return Status::Ok();
  if (o.num_draft_tokens < 1 || o.num_draft_tokens > 64)
    return Status::Errorf("--speculative-num-draft-tokens {}: must be in [1, 64]", o.num_draft_tokens);
  if (o.ngram_min_match < 1 || o.ngram_min_match > 1024)
    return Status::Errorf("--speculative-ngram-min-match-window-size {}: must be in [1, 1024]", o.ngram_min_match);
  if (o.ngram_max_match < o.ngram_min_match || o.ngram_max_match > 1024)
    return Status::Errorf("--speculative-ngram-max-match-window-size {}: must be in [min window ({}), 1024]",
                          o.ngram_max_match, o.ngram_min_match);
  return Status::Ok();
}

void NgramDraft(std::span<const int32_t> tokens, int64_t min_match, int64_t max_match, int64_t max_drafts,
                std::vector<int32_t>& out) {
  const int64_t L = int64_t(tokens.size());
  if (max_drafts <= 0 || L < 2 || min_match < 1) return;
  for (int64_t n = std::min(max_match, L - 1); n >= min_match; --n) {
    const auto suffix = tokens.subspan(size_t(L - n));
    // The latest earlier occurrence: start i < L - n with tokens[i, i + n) == suffix.
    for (int64_t i = L - n - 1; i >= 0; --i) {
      if (tokens[size_t(i + n - 1)] != suffix[size_t(n - 1)]) continue;  // cheap reject on the last token
      if (!std::equal(suffix.begin(), suffix.end(), tokens.begin() + i)) continue;
      const int64_t from = i + n, count = std::min(max_drafts, L - from);
      out.insert(out.end(), tokens.begin() + from, tokens.begin() + from + count);
      return;
    }
  }
}

}  // namespace tern
