// --speculative-* flags (SGLang's names) for serve and generate.
#include <memory>
#include <string>

#include "app/commands.h"
#include "base/mapped_file.h"

namespace tern::app {

std::function<Result<SpeculativeOptions>()> AddSpeculativeOptions(CLI::App& app) {
  struct Raw {
    std::string algorithm, rollback, token_map;
    SpeculativeOptions o;
    bool draft_tokens_given = false;
  };
  auto raw = std::make_shared<Raw>();
  app.add_option("--speculative-algorithm", raw->algorithm,
                 "speculative decoding: NGRAM (prompt lookup: drafts copied from where the latest tokens occurred "
                 "before in the prompt or output) or NEXTN (the model's MTP head drafts, Qwen3.5 / Qwen3-Next); "
                 "drafts are verified in one forward and the output stays the model's own");
  app.add_option("--speculative-num-draft-tokens", raw->o.num_draft_tokens,
                 "NGRAM: draft tokens per verify forward (default 4); NEXTN: tokens per verify, num_steps + 1 "
                 "(the default)")
      ->each([raw](const std::string&) { raw->draft_tokens_given = true; });
  app.add_option("--speculative-num-steps", raw->o.num_steps, "NEXTN: MTP head steps (drafts) per verify")
      ->default_val(3);
  app.add_option("--speculative-eagle-topk", raw->o.eagle_topk, "NEXTN: candidates per step (only 1: a chain)")
      ->default_val(1);
  app.add_option("--speculative-ngram-min-match-window-size", raw->o.ngram_min_match,
                 "NGRAM: the shortest suffix that may propose drafts")
      ->default_val(1);
  app.add_option("--speculative-ngram-max-match-window-size", raw->o.ngram_max_match,
                 "NGRAM: the longest suffix looked up (longer matches are tried first)")
      ->default_val(12);
  app.add_option("--speculative-state-rollback", raw->rollback,
                 "hybrid models (Qwen3.5 / Qwen3-Next): how the recurrent state returns to the last kept token "
                 "after a rejected draft: recompute (restore the state from before the verify and recompute the "
                 "kept tokens in the next one; one spare state per sequence) or per-token (the verify keeps the "
                 "state after each draft; one spare state per draft, nothing recomputed; the default)")
      ->default_val("per-token");
  app.add_option("--speculative-token-map", raw->token_map,
                 "NEXTN: a file of token ids (comma- or whitespace-separated, or a JSON array) the MTP head drafts "
                 "among: its lm_head step reads only these rows (SGLang's hot-token map); the output is unchanged");
  return [raw]() -> Result<SpeculativeOptions> {
    SpeculativeOptions o = raw->o;
    o.algorithm = SpeculativeAlgorithm::kNone;
    if (!raw->algorithm.empty() && raw->algorithm != "none" && raw->algorithm != "NONE") {
      TERN_ASSIGN_OR_RETURN(o.algorithm, ParseSpeculativeAlgorithm(raw->algorithm));
    }
    if (raw->rollback == "per-token") {
      o.state_rollback = StateRollback::kPerToken;
    } else if (raw->rollback != "recompute") {
      return Status::Errorf("--speculative-state-rollback {}: must be recompute or per-token", raw->rollback);
    }
    if (!raw->token_map.empty()) {
      // At most 16 Mi ids of up to 10 digits and a separator each.
      auto text = ReadFileToString(raw->token_map, size_t(11) << 24);
      if (!text.ok()) return Status::Errorf("--speculative-token-map {}: {}", raw->token_map, text.status().message());
      auto ids = ParseTokenMap(*text);
      if (!ids.ok()) return Status::Errorf("--speculative-token-map {}: {}", raw->token_map, ids.status().message());
      o.token_map = std::move(*ids);
    }
    if (!raw->draft_tokens_given)
      o.num_draft_tokens = o.algorithm == SpeculativeAlgorithm::kNextn ? o.num_steps + 1 : 4;
    TERN_RETURN_IF_ERROR(ValidateSpeculativeOptions(o));
    return o;
  };
}

}  // namespace tern::app
