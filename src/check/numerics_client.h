// DeploymentClient: a deployment's token distributions over HTTP, through
// whichever logprob API it offers:
//   SGLang /generate (tern, SGLang): input_ids, return_logprob,
//     top_logprobs_num and logprob_start_len 0, so the prompt is scored too
//     (input_token_logprobs / input_top_logprobs, entry 0 without a logprob);
//   vLLM /v1/completions: prompt as ids, logprobs, prompt_logprobs and
//     return_tokens_as_token_ids (tokens named "token_id:<id>");
//   llama.cpp /completion: prompt as ids, n_probs, return_tokens (generated
//     tokens only: completion_probabilities with ids, which skip the tokens
//     llama.cpp holds back inside a UTF-8 character; see AlignSentTokens).
// The choice follows the discovered dialect (tern and SGLang: /generate;
// vLLM: completions; llama.cpp: /completion); an unknown server is tried in
// that order, each API answering 404/405 handing over to the next. Every
// request is greedy (temperature 0). A NaN/Infinity (or a null where a number
// belongs) marks its position nonfinite.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "check/http_client.h"
#include "check/numerics_reference.h"
#include "check/server.h"

namespace tern::check {

enum class LogprobApi { kUnknown, kSglangGenerate, kVllmCompletions, kLlamaCpp };

// The deployment's greedy continuation of one prompt.
struct DeploymentRun {
  std::vector<int32_t> output;              // generated ids
  std::vector<PositionLogprobs> positions;  // indices into prompt + output, ascending
  bool prompt_scored = false;               // the API scored prompt positions too
  int64_t unscored_output = 0;              // generated ids without a distribution (llama.cpp only: AlignSentTokens)
  int nonfinite_json = 0;                   // NaN/Infinity words in the reply
  double seconds = 0;
};

// llama.cpp's /completion sends no completion_probabilities entry for a
// generated token after which the text ends inside a UTF-8 character (its
// server holds the bytes back and sends them with the next entry), so the
// entries' ids are a subsequence of the generated ids. For each entry: its
// index in `generated` where every placement consistent with all entries
// agrees (the leftmost and the rightmost matching), -1 where two placements
// are possible (a held-back token with the id of a later sent one), so that
// no distribution is compared at a position it may not belong to. Error: the
// entries are not a subsequence of the generated ids.
Result<std::vector<int64_t>> AlignSentTokens(const std::vector<int32_t>& generated, const std::vector<int32_t>& sent);

class DeploymentClient {
 public:
  DeploymentClient(const HttpClient& http, const ServerInfo& server);

  // Greedy continuation of `prompt` (max_tokens new ids, ending early at the
  // server's end of sequence) with top_k logprobs at every position.
  Result<DeploymentRun> Continue(const std::vector<int32_t>& prompt, int max_tokens, int top_k);
  // Teacher-forced: positions [first, tokens.size()) of `tokens` as a prompt
  // (SGLang and vLLM only; llama.cpp does not score prompts).
  Result<std::vector<PositionLogprobs>> Score(const std::vector<int32_t>& tokens, int64_t first, int top_k);
  // The prompt's ids as this deployment tokenizes it: messages through
  // /v1/chat/completions return_prompt_token_ids (tern, SGLang) or vLLM's
  // /tokenize with messages; raw text through /tokenize.
  Result<std::vector<int32_t>> Tokenize(const NumericsPrompt& prompt);

  LogprobApi api() const { return api_; }
  // "SGLang /generate (return_logprob, top_logprobs_num 20, logprob_start_len 0)".
  std::string ApiDescription(int top_k) const;

 private:
  // score_from >= 1: also score prompt positions from there (where the API can).
  // *absent: the server has no such endpoint (404/405/501), so another API may be tried.
  Result<DeploymentRun> Request(LogprobApi api, const std::vector<int32_t>& tokens, int max_tokens, int top_k,
                                int64_t score_from, bool* absent = nullptr);

  const HttpClient& http_;
  ServerInfo server_;
  LogprobApi api_ = LogprobApi::kUnknown;
};

// A deployment as the reference (--reference-url).
class DeploymentReference : public LogprobReference {
 public:
  DeploymentReference(HttpClient http, const ServerInfo& server)
      : http_(std::move(http)), client_(http_, server), url_(http_.options().url.ToString()) {}
  std::string Describe() const override { return "the deployment at " + url_; }
  Result<std::vector<int32_t>> Tokenize(const NumericsPrompt& prompt) override { return client_.Tokenize(prompt); }
  Result<std::vector<PositionLogprobs>> Score(const std::vector<int32_t>& tokens, int64_t first, int top_k,
                                              const std::vector<std::vector<int32_t>>& want) override {
    (void)want;
    // Judged only where the reference is whole and finite: a position it
    // left out, or sent NaN for, once passed (an empty top-k agrees with
    // anything, and compares with a KL of 0).
    auto scored = client_.Score(tokens, first, top_k);
    if (!scored.ok()) return scored.status();
    const int64_t want_positions = int64_t(tokens.size()) - first;
    if (int64_t(scored->size()) != want_positions)
      return Status::Errorf("the reference scored {} positions of {}", scored->size(), want_positions);
    for (const PositionLogprobs& p : *scored)
      if (p.nonfinite) return Status::Errorf("the reference's logprobs at position {} are NaN or infinite", p.position);
    return scored;
  }

 private:
  HttpClient http_;
  DeploymentClient client_;
  std::string url_;
};

}  // namespace tern::check
