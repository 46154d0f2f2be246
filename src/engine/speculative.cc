#include "engine/speculative.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

namespace tern {

Result<SpeculativeAlgorithm> ParseSpeculativeAlgorithm(std::string_view name) {
  if (name == "NGRAM" || name == "ngram") return SpeculativeAlgorithm::kNgram;
  if (name == "NEXTN" || name == "nextn") return SpeculativeAlgorithm::kNextn;
  if (name == "EAGLE" || name == "EAGLE3" || name == "eagle" || name == "eagle3")
    return Status::Errorf(
        "--speculative-algorithm {}: a separate draft model is not supported; NEXTN drafts with the model's own "
        "MTP head (Qwen3.5 / Qwen3-Next), NGRAM by prompt lookup",
        name);
  return Status::Errorf("--speculative-algorithm {}: not supported; this build has NGRAM (prompt lookup) and NEXTN "
                        "(the model's MTP head)",
                        name);
}

Status ValidateSpeculativeOptions(const SpeculativeOptions& o) {
  if (o.algorithm == SpeculativeAlgorithm::kNone) {
    if (!o.token_map.empty()) return Status::Error("--speculative-token-map needs --speculative-algorithm NEXTN");
    return Status::Ok();
  }
  if (o.num_draft_tokens < 1 || o.num_draft_tokens > 64)
    return Status::Errorf("--speculative-num-draft-tokens {}: must be in [1, 64]", o.num_draft_tokens);
  if (o.algorithm == SpeculativeAlgorithm::kNextn) {
    if (o.eagle_topk != 1)
      return Status::Errorf("--speculative-eagle-topk {}: only 1 is supported (a chain of drafts, no tree)",
                            o.eagle_topk);
    if (o.num_steps < 1 || o.num_steps > 16)
      return Status::Errorf("--speculative-num-steps {}: must be in [1, 16]", o.num_steps);
    if (o.token_map.size() > kMaxTokenMapIds)
      return Status::Errorf("--speculative-token-map: {} ids, more than any vocabulary", o.token_map.size());
    if (o.num_draft_tokens != o.num_steps + 1)
      return Status::Errorf("--speculative-num-draft-tokens {} with --speculative-num-steps {} and top-k 1: must be "
                            "num_steps + 1 = {} (the last accepted token and one draft per step)",
                            o.num_draft_tokens, o.num_steps, o.num_steps + 1);
    return Status::Ok();
  }
  if (!o.token_map.empty())
    return Status::Error("--speculative-token-map: only NEXTN drafts from a head's logits (NGRAM copies tokens)");
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
      // What followed it, as an overlapping copy: past the end of `tokens`
      // the drafts so far continue (a run of one token repeated, whose
      // latest earlier occurrence is one token back, drafts max_drafts of
      // it, not one).
      const int64_t from = i + n, first = int64_t(out.size());
      for (int64_t j = 0; j < max_drafts; ++j) {
        const int64_t at = from + j;
        out.push_back(at < L ? tokens[size_t(at)] : out[size_t(first + at - L)]);
      }
      return;
    }
  }
}

Result<std::vector<int32_t>> ParseTokenMap(std::string_view text) {
  // SGLang's maps are torch.save files: a zip archive, or a pickle before torch 1.6.
  if (text.starts_with("PK\x03\x04") || text.starts_with("\x80"))
    return Status::Error("token map: this looks like a PyTorch file (SGLang's .pt); tern reads the ids as text, "
                         "e.g. from python: json.dump(torch.load(path).tolist(), f)");
  std::vector<int32_t> ids;
  size_t i = 0, open = std::string_view::npos, close = std::string_view::npos;
  const auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (i < text.size()) {
    const char c = text[i];
    if (is_space(c) || c == ',') {
      ++i;
    } else if (c == '[' && open == std::string_view::npos && ids.empty()) {
      open = i++;
    } else if (c == ']' && open != std::string_view::npos && close == std::string_view::npos) {
      close = i++;
    } else if (c >= '0' && c <= '9' && close == std::string_view::npos) {
      int64_t v = 0;
      const size_t start = i;
      while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
        v = v * 10 + (text[i] - '0');
        if (v > std::numeric_limits<int32_t>::max())
          return Status::Errorf("token map: the id at byte {} is larger than any token id", start);
        ++i;
      }
      if (ids.size() == kMaxTokenMapIds)
        return Status::Errorf("token map: more than {} ids, more than any vocabulary", kMaxTokenMapIds);
      ids.push_back(int32_t(v));
    } else {
      const bool printable = c > ' ' && c < 127;
      return Status::Errorf("token map: unexpected {} at byte {} (token ids separated by commas or whitespace, "
                            "optionally in one [ ] pair)",
                            printable ? fmt::format("'{}'", c) : fmt::format("byte 0x{:02x}", uint8_t(c)), i);
    }
  }
  if (open != std::string_view::npos && close == std::string_view::npos)
    return Status::Errorf("token map: the '[' at byte {} is not closed", open);
  if (ids.empty()) return Status::Error("token map: no token ids");
  return ids;
}

}  // namespace tern
