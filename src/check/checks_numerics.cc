// The numerics suite: for each prompt, the deployment's greedy continuation
// with top-k logprobs, the reference's distributions over exactly the same
// tokens (teacher-forced), and the comparison position by position
// (numerics_compare.h). One row per prompt ("numerics.<prompt>") and one
// overall ("numerics").
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <optional>

#include "check/checks_common.h"
#include "check/json_text.h"
#include "check/numerics_client.h"
#include "check/numerics_prompts.h"
#include "check/url.h"

namespace tern::check {
namespace {

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

CheckResult Failed(std::string name, std::string detail) {
  CheckResult c;
  c.name = std::move(name);
  c.outcome = Outcome::kFail;
  c.detail = std::move(detail);
  return c;
}

// --reference-numerics auto: "bf16" when the deployment says it rounds
// activations to BF16 (tern's /get_server_info "activations"), "w4a4" when it
// says it quantizes them as Blackwell's NVFP4 GEMM does, "w4a8" when it
// takes NVFP4 layers' inputs as 8-bit integers (tern's --quant-numerics
// w4a8), else "full";
// `why` says which and how it was decided.
std::string ResolveNumerics(const HttpClient& http, std::string* why) {
  auto r = http.Get("/get_server_info");
  std::string problem;
  if (!r.ok()) {
    problem = r.status().message();
  } else if (r->status != 200) {
    problem = fmt::format("/get_server_info answered {}", r->status);
  } else if (auto j = ParseJsonLenient(r->body); j && j->is_object() && j->contains("activations") &&
                                                  (*j)["activations"].is_string()) {
    const std::string a = (*j)["activations"].get<std::string>();
    *why = fmt::format("auto: the deployment's /get_server_info says activations {}", a);
    return a == "bf16" || a == "w4a4" || a == "w4a8" ? a : "full";
  } else {
    problem = "/get_server_info has no \"activations\"";
  }
  *why = fmt::format("auto: the deployment does not say how it rounds activations ({}); judged as f32 (give "
                     "--reference-numerics bf16 for a GPU deployment)",
                     problem);
  return "full";
}

// The deployment's KV cache dtype as its /get_server_info says ("kv_cache_dtype",
// tern's and SGLang's field), or "f32" where it does not say.
std::string DeploymentKvDtype(const HttpClient& http) {
  auto r = http.Get("/get_server_info");
  if (!r.ok() || r->status != 200) return "f32";
  auto j = ParseJsonLenient(r->body);
  if (!j || !j->is_object() || !j->contains("kv_cache_dtype") || !(*j)["kv_cache_dtype"].is_string()) return "f32";
  return (*j)["kv_cache_dtype"].get<std::string>();
}

// The reference the options name: another deployment or the loaded model.
Result<std::unique_ptr<LogprobReference>> MakeReference(const CheckOptions& o, const ReferenceModelSpec& spec) {
  const NumericsOptions& n = o.numerics;
  if (!n.reference_url.empty()) {
    auto url = ParseBaseUrl(n.reference_url);
    if (!url.ok()) return Status::Errorf("--reference-url: {}", url.status().message());
    HttpClient http(HttpOptions{.url = *url, .api_key = o.api_key, .timeout_s = o.timeout_s,
                                .connect_timeout_s = std::min(10.0, o.timeout_s)});
    auto ready = WaitUntilReady(http, o.wait_s, nullptr);
    if (!ready.ok()) return Status::Errorf("--reference-url {}: {}", url->ToString(), ready.status().message());
    ServerInfo info = DiscoverServer(http, "");
    return std::unique_ptr<LogprobReference>(new DeploymentReference(std::move(http), info));
  }
  if (!n.loader) return Status::Error("--reference-model needs the tern binary (tern_check_driver has no engine)");
  return n.loader(spec);
}

// A token's text as a JSON string literal (invalid UTF-8 repaired).
std::string Quote(const std::string& s) {
  std::string r;
  RepairUtf8(s, &r);
  return nlohmann::json(r).dump();
}

// "output token 12 \" the\"" / "prompt token 7".
std::string Where(int64_t position, int64_t prompt_len, const LogprobReference& ref, int32_t token) {
  std::string text = ref.TokenText(token);
  std::string what = position < prompt_len ? fmt::format("prompt token {}", position)
                                           : fmt::format("output token {}", position - prompt_len);
  return text.empty() ? what : fmt::format("{} {}", what, Quote(text));
}

}  // namespace

std::vector<CheckResult> RunNumerics(CheckContext& ctx) {
  const CheckOptions& o = ctx.options();
  const NumericsOptions& n = o.numerics;
  std::vector<CheckResult> rows;
  // How the deployment is judged (numerics_reference.h ReferenceModelSpec).
  ReferenceModelSpec spec = n.reference;
  std::string numerics_why = "--reference-numerics " + spec.numerics;
  if (spec.numerics == "auto") spec.numerics = ResolveNumerics(ctx.http(), &numerics_why);
  if (spec.numerics == "w4a8") spec.kv_cache_dtype = DeploymentKvDtype(ctx.http());
  // A deployment found quantizing its activations is judged by the looser
  // thresholds that --reference-numerics w4a4 gives (it got f32's before).
  const NumericsThresholds th =
      spec.numerics == "w4a4" || spec.numerics == "w8a8" ? n.quantized_thresholds : n.thresholds;
  const bool bf16_judging = spec.numerics == "bf16";
  const auto t_load = Clock::now();
  auto made = MakeReference(o, spec);
  if (!made.ok()) return {Failed("numerics", "no reference: " + made.status().message())};
  std::unique_ptr<LogprobReference> ref = std::move(*made);
  const int variants_to_run = std::min(ref->RoundedVariants(), std::max(0, n.rounded_references));
  const double load_s = Since(t_load);
  std::vector<NumericsPrompt> prompts;
  if (n.prompts_file.empty()) {
    prompts = BuiltInNumericsPrompts(o.long_context_tokens);
  } else {
    auto loaded = LoadNumericsPrompts(n.prompts_file);
    if (!loaded.ok()) return {Failed("numerics", loaded.status().message())};
    prompts = std::move(*loaded);
  }

  DeploymentClient dep(ctx.http(), ctx.server());
  struct Totals {
    int64_t positions = 0, agree = 0, near_ties = 0, nonfinite = 0;
    double kl_sum = 0, kl_max = 0, gap_max = 0, dep_s = 0, ref_s = 0;
    int failed = 0;
    int64_t unscored = 0;
    std::string first_failure;
  } tot;
  nlohmann::json per_prompt = nlohmann::json::array();
  for (const NumericsPrompt& p : prompts) {
    const std::string row = "numerics." + p.name;
    auto ids = ref->Tokenize(p);
    if (!ids.ok()) {
      rows.push_back(Failed(row, "tokenizing the prompt: " + ids.status().message()));
      ++tot.failed;
      continue;
    }
    auto run = dep.Continue(*ids, n.tokens, n.top_logprobs);
    if (!run.ok()) {
      std::string why = "the deployment: " + run.status().message();
      rows.push_back(Failed(row, why));
      if (!tot.failed++) tot.first_failure = p.name + ": " + why;
      continue;
    }
    tot.dep_s += run->seconds;
    std::vector<int32_t> seq = *ids;
    seq.insert(seq.end(), run->output.begin(), run->output.end());
    const int64_t prompt_len = int64_t(ids->size());
    const int64_t first = run->prompt_scored ? 1 : prompt_len;
    std::vector<std::vector<int32_t>> want(seq.size() - size_t(std::min<int64_t>(first, int64_t(seq.size()))));
    for (const PositionLogprobs& d : run->positions) {
      if (d.position < first || d.position >= int64_t(seq.size())) continue;
      auto& w = want[size_t(d.position - first)];
      w.push_back(d.token);
      for (const auto& [id, lp] : d.top) w.push_back(id);
    }
    std::vector<PositionLogprobs> scored;
    double ref_s = 0;
    if (first < int64_t(seq.size())) {
      const auto t0 = Clock::now();
      auto r = ref->Score(seq, first, n.top_logprobs, want);
      ref_s = Since(t0);
      if (!r.ok()) {
        rows.push_back(Failed(row, "the reference: " + r.status().message()));
        ++tot.failed;
        continue;
      }
      scored = std::move(*r);
    }
    SequenceComparison cmp = CompareSequence(scored, run->positions, th);
    // A BF16 deployment past the thresholds: how far do BF16-rounded
    // references move from the reference on the same tokens (numerics_compare.h)?
    std::optional<RoundingJudgement> rounding;
    std::string rounding_error;
    if (bf16_judging && !cmp.failure.empty() && cmp.positions > 0 && cmp.nonfinite == 0 &&
        first < int64_t(seq.size()) && variants_to_run > 0) {
      // Each rounded reference also reports the reference's top-k ids, so that
      // it is compared with the reference over the reference's whole top-k.
      std::vector<std::vector<int32_t>> want_v = want;
      for (const PositionLogprobs& r : scored)
        if (r.position >= first && size_t(r.position - first) < want_v.size())
          for (const auto& [id, lp] : r.top) want_v[size_t(r.position - first)].push_back(id);
      std::vector<SequenceComparison> variants;
      const auto t0 = Clock::now();
      for (int v = 0; v < variants_to_run && rounding_error.empty(); ++v) {
        auto r = ref->ScoreRounded(v, seq, first, n.top_logprobs, want_v);
        if (!r.ok()) rounding_error = r.status().message();
        else variants.push_back(CompareSequence(*r, scored, th));
      }
      ref_s += Since(t0);
      if (rounding_error.empty()) rounding = JudgeWithRoundedVariants(cmp, variants, th);
    }
    tot.ref_s += ref_s;
    CheckResult c;
    c.name = row;
    c.latency_s = run->seconds;
    c.duration_s = run->seconds + ref_s;
    c.tokens = int64_t(run->output.size());
    c.outcome = cmp.failure.empty() || (rounding && rounding->within) ? Outcome::kPass : Outcome::kFail;
    const std::string stats = fmt::format(
        "top-1 {}/{} ({:.1f}%, {} near-ties), KL mean {:.2e} max {:.2e}, max |dlogprob| {:.3g}", cmp.agree,
        cmp.positions - cmp.nonfinite, 100.0 * double(cmp.agree) / double(std::max<int64_t>(cmp.positions - cmp.nonfinite, 1)),
        cmp.near_ties, cmp.kl_mean, cmp.kl_max, cmp.gap_max);
    nlohmann::json m = {{"prompt_tokens", prompt_len},
                        {"output_tokens", run->output.size()},
                        {"positions", cmp.positions},
                        {"prompt_scored", run->prompt_scored},
                        {"unscored_output_tokens", run->unscored_output},
                        {"top1_agree", cmp.agree},
                        {"near_ties", cmp.near_ties},
                        {"nonfinite_positions", cmp.nonfinite},
                        {"kl_mean", cmp.kl_mean},
                        {"kl_max", cmp.kl_max},
                        {"kl_max_position", cmp.kl_max_position},
                        {"logprob_gap_max", cmp.gap_max},
                        {"logprob_gap_max_position", cmp.gap_max_position},
                        {"deployment_tail_mass_max", cmp.dep_rest_max},
                        {"deployment_s", run->seconds},
                        {"reference_s", ref_s}};
    std::string rounding_text;
    if (rounding) {
      const RoundingJudgement& j = *rounding;
      m["bf16_rounding"] = {{"divergent_positions", j.divergent},
                            {"rounded_references_divergent_positions", j.variant_divergent},
                            {"rounded_references_kl_mean_max", j.variant_kl_mean_max},
                            {"rounded_references_kl_max", j.variant_kl_max},
                            {"rounded_references_logprob_gap_max", j.variant_gap_max},
                            {"allowed_divergent_positions", j.allowed_divergent},
                            {"allowed_kl_mean", j.allowed_kl_mean},
                            {"allowed_kl_max", j.allowed_kl_max},
                            {"allowed_logprob_gap_max", j.allowed_gap_max},
                            {"within", j.within}};
      rounding_text = fmt::format(
          "{} of {} positions past the thresholds, KL mean {:.2e} max {:.3g}, max |dlogprob| {:.3g}; {} "
          "BF16-rounded references: {} positions, KL mean up to {:.2e} max {:.3g}, max |dlogprob| {:.3g}",
          j.divergent, j.positions, j.kl_mean, j.kl_max, j.gap_max, j.variant_divergent.size(),
          fmt::join(j.variant_divergent, ", "), j.variant_kl_mean_max, j.variant_kl_max, j.variant_gap_max);
    }
    if (cmp.first_divergence) {
      const PositionComparison& f = *cmp.first_divergence;
      m["first_divergence"] = {{"position", f.position},
                               {"in", f.position < prompt_len ? "prompt" : "output"},
                               {"index", f.position < prompt_len ? f.position : f.position - prompt_len},
                               {"deployment_top1", f.dep_top1},
                               {"reference_top1", f.ref_top1},
                               {"kl", f.kl.kl},
                               {"logprob_gap", f.gap},
                               {"why", f.divergence}};
    }
    if (cmp.failure.empty()) {
      c.detail = stats;
    } else if (rounding && rounding->within) {
      c.detail = fmt::format("within BF16 rounding ({}); {}", rounding_text, stats);
    } else if (cmp.first_divergence) {
      const PositionComparison& f = *cmp.first_divergence;
      c.detail = fmt::format("first diverges at position {} ({}): {}; deployment top-1 {}, reference top-1 {}; {}",
                             f.position, Where(f.position, prompt_len, *ref, seq[size_t(f.position)]), f.divergence,
                             Quote(ref->TokenText(f.dep_top1)), Quote(ref->TokenText(f.ref_top1)), stats);
      if (f.nonfinite)
        c.detail = fmt::format("NaN or infinite logprobs from the deployment ({} of {} positions, first at position "
                               "{}, {})",
                               cmp.nonfinite, cmp.positions, f.position,
                               Where(f.position, prompt_len, *ref, seq[size_t(f.position)]));
    } else {
      c.detail = cmp.failure + "; " + stats;
    }
    if (rounding && !rounding->within)
      c.detail += fmt::format(" [more than BF16 rounding explains: {}; {}]", rounding->why, rounding_text);
    if (!rounding_error.empty())
      c.detail += fmt::format(" [judged position by position: the BF16-rounded references failed: {}]", rounding_error);
    // Positions where the deployment sent its chosen token's logprob but no
    // top-k: compared on that alone (a KL over an empty support is 0). None
    // at all, asked for top-k, is a failure: no distribution was compared.
    int64_t without_top = 0;
    for (const PositionLogprobs& p : run->positions) without_top += !p.nonfinite && p.top.empty();
    m["positions_without_top_k"] = without_top;
    if (n.top_logprobs > 0 && without_top > 0 && without_top == int64_t(run->positions.size())) {
      c.outcome = Outcome::kFail;
      c.detail = fmt::format("asked for {} top logprobs a position, the deployment sent none at any of its {} "
                             "positions: no distribution could be compared; {}",
                             n.top_logprobs, without_top, stats);
    } else if (n.top_logprobs > 0 && without_top > 0) {
      c.detail += fmt::format(" [{} of {} positions without the deployment's top-k logprobs: there only the chosen "
                              "token's logprob was compared]",
                              without_top, run->positions.size());
    }
    if (run->unscored_output > 0)
      c.detail += fmt::format(" [{} of {} output tokens without a distribution from the deployment: llama.cpp sends "
                              "none for a token that ends inside a UTF-8 character, and one whose place among the "
                              "generated ids is ambiguous is not compared]",
                              run->unscored_output, run->output.size());
    if (run->nonfinite_json > 0 && c.detail.find("NaN") == std::string::npos)
      c.detail += fmt::format(" [{} NaN/Infinity values in the reply]", run->nonfinite_json);
    c.metrics = m;
    per_prompt.push_back({{"prompt", p.name}, {"result", OutcomeName(c.outcome)}});
    if (c.outcome == Outcome::kFail && !tot.failed++) tot.first_failure = p.name + ": " + c.detail;
    tot.positions += cmp.positions - cmp.nonfinite;
    tot.unscored += run->unscored_output;
    tot.agree += cmp.agree;
    tot.near_ties += cmp.near_ties;
    tot.nonfinite += cmp.nonfinite;
    tot.kl_sum += cmp.kl_mean * double(cmp.positions - cmp.nonfinite);
    tot.kl_max = std::max(tot.kl_max, cmp.kl_max);
    tot.gap_max = std::max(tot.gap_max, cmp.gap_max);
    rows.push_back(std::move(c));
  }

  CheckResult all;
  all.name = "numerics";
  all.outcome = tot.failed ? Outcome::kFail : Outcome::kPass;
  const std::string api = dep.ApiDescription(n.top_logprobs);
  const std::string overall = fmt::format(
      "{} prompts, {} positions: top-1 {:.2f}% ({} near-ties), KL mean {:.2e} max {:.2e} (lower bounds on the top-{} "
      "support), max |dlogprob| {:.3g}; via {}; reference {}",
      prompts.size(), tot.positions, 100.0 * double(tot.agree) / double(std::max<int64_t>(tot.positions, 1)),
      tot.near_ties, tot.kl_sum / double(std::max<int64_t>(tot.positions, 1)), tot.kl_max, n.top_logprobs,
      tot.gap_max, api, ref->Describe());
  std::string judged;
  if (bf16_judging)
    judged = variants_to_run > 0
                 ? fmt::format("; judged as a BF16 deployment ({})", numerics_why)
                 : fmt::format("; judged position by position: a BF16 deployment ({}), but the reference has no "
                               "BF16-rounded variants (or --rounded-references 0)",
                               numerics_why);
  else if (spec.numerics == "w4a4" || spec.numerics == "w8a8")
    judged = fmt::format("; judged as a W4A4 deployment ({})", numerics_why);
  else if (spec.numerics == "w4a8")
    judged = fmt::format("; judged as a W4A8 deployment against a W4A8 reference ({})", numerics_why);
  else
    judged = fmt::format("; judged as an f32 deployment ({})", numerics_why);
  all.detail = tot.failed ? fmt::format("{} of {} prompts fail (first: {}); {}", tot.failed, prompts.size(),
                                        tot.first_failure, overall + judged)
                          : overall + judged;
  all.latency_s = tot.dep_s;
  all.metrics = {{"api", api},
                 {"reference", ref->Describe()},
                 {"judged_as", spec.numerics},
                 {"judged_as_why", numerics_why},
                 {"reference_load_s", load_s},
                 {"deployment_s", tot.dep_s},
                 {"reference_s", tot.ref_s},
                 {"positions", tot.positions},
                 {"unscored_output_tokens", tot.unscored},
                 {"top1_agreement", double(tot.agree) / double(std::max<int64_t>(tot.positions, 1))},
                 {"near_ties", tot.near_ties},
                 {"nonfinite_positions", tot.nonfinite},
                 {"kl_mean", tot.kl_sum / double(std::max<int64_t>(tot.positions, 1))},
                 {"kl_max", tot.kl_max},
                 {"logprob_gap_max", tot.gap_max},
                 {"top_logprobs", n.top_logprobs},
                 {"tokens", n.tokens},
                 {"thresholds",
                  {{"tie_margin", th.tie_margin}, {"kl_max", th.kl_max}, {"kl_mean", th.kl_mean}, {"gap_max", th.gap_max}}},
                 {"prompts", per_prompt}};
  rows.push_back(std::move(all));
  return rows;
}

}  // namespace tern::check
