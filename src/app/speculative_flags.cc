// --speculative-* flags (SGLang's names) for serve and generate.
#include <memory>
#include <string>

#include "app/commands.h"

namespace tern::app {

std::function<Result<SpeculativeOptions>()> AddSpeculativeOptions(CLI::App& app) {
  struct Raw {
    std::string algorithm;
    SpeculativeOptions o;
  };
  auto raw = std::make_shared<Raw>();
  app.add_option("--speculative-algorithm", raw->algorithm,
                 "speculative decoding: NGRAM (prompt lookup: drafts copied from where the latest tokens occurred "
                 "before in the prompt or output, verified in one forward; the output stays the model's own)");
  app.add_option("--speculative-num-draft-tokens", raw->o.num_draft_tokens, "draft tokens per verify forward")
      ->default_val(4);
  app.add_option("--speculative-ngram-min-match-window-size", raw->o.ngram_min_match,
                 "NGRAM: the shortest suffix that may propose drafts")
      ->default_val(1);
  app.add_option("--speculative-ngram-max-match-window-size", raw->o.ngram_max_match,
                 "NGRAM: the longest suffix looked up (longer matches are tried first)")
      ->default_val(12);
  return [raw]() -> Result<SpeculativeOptions> {
    SpeculativeOptions o = raw->o;
    o.algorithm = SpeculativeAlgorithm::kNone;
    if (!raw->algorithm.empty() && raw->algorithm != "none" && raw->algorithm != "NONE") {
      TERN_ASSIGN_OR_RETURN(o.algorithm, ParseSpeculativeAlgorithm(raw->algorithm));
    }
    TERN_RETURN_IF_ERROR(ValidateSpeculativeOptions(o));
    return o;
  };
}

}  // namespace tern::app
