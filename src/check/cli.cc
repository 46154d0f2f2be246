#include "check/cli.h"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "base/mapped_file.h"
#include "check/report.h"
#include "check/runner.h"

namespace tern::check {
namespace {

bool ColorWanted(int fd) {
  const char* no_color = std::getenv("NO_COLOR");
  const char* term = std::getenv("TERM");
  return isatty(fd) && !(no_color && *no_color) && !(term && std::string_view(term) == "dumb");
}

void Out(const std::string& s) {
  std::fwrite(s.data(), 1, s.size(), stdout);
  std::fflush(stdout);
}

}  // namespace

int RunCheckCommand(const CheckOptions& options) {
  // A server that drops a connection while we write must not kill the process.
  signal(SIGPIPE, SIG_IGN);
  const bool err_tty = isatty(STDERR_FILENO);
  auto last_progress = std::chrono::steady_clock::now() - std::chrono::hours(1);
  bool progress_shown = false;
  RunCallbacks cb;
  // Readiness: redraw one line on a terminal; elsewhere a line every 10 s.
  cb.progress = [&](std::string_view line) {
    auto now = std::chrono::steady_clock::now();
    if (err_tty) {
      fmt::print(stderr, "\r{}\x1b[K", line);
      progress_shown = true;
    } else if (now - last_progress >= std::chrono::seconds(10)) {
      fmt::print(stderr, "{}\n", line);
      last_progress = now;
    }
  };
  auto clear_progress = [&] {
    if (progress_shown) fmt::print(stderr, "\r\x1b[K");
    progress_shown = false;
  };
  cb.on_start = [&](const RunReport& r) {
    clear_progress();
    Out(TableHeader(r, options.color));
  };
  cb.on_check_start = [&](const CheckSpec& spec) {
    if (err_tty) {
      fmt::print(stderr, "\rrunning {}...\x1b[K", spec.name);
      progress_shown = true;
    }
  };
  cb.on_result = [&](const CheckResult& r) {
    clear_progress();
    Out(TableRow(r, options.color));
  };
  RunReport report = RunChecks(options, cb);
  clear_progress();
  Out(TableSummary(report, options.color));
  int code = report.exit_code;
  if (!options.json_path.empty()) {
    if (Status s = WriteStringToFile(options.json_path, ReportToJsonText(report)); !s.ok()) {
      fmt::print(stderr, "tern check: writing the JSON report: {}\n", s.message());
      code = kExitUnreachable;
    }
  }
  if (!options.junit_path.empty()) {
    if (Status s = WriteStringToFile(options.junit_path, ReportToJunit(report)); !s.ok()) {
      fmt::print(stderr, "tern check: writing the JUnit report: {}\n", s.message());
      code = kExitUnreachable;
    }
  }
  return code;
}

std::function<int()> RegisterCheck(CLI::App& sub, ReferenceLoader loader) {
  auto o = std::make_shared<CheckOptions>();
  o->numerics.loader = std::move(loader);
  auto no_color = std::make_shared<bool>(false);
  sub.add_option("--url", o->url, "server URL (http://host:port)")->capture_default_str();
  sub.add_option("--api-key", o->api_key, "API key, sent as 'Authorization: Bearer KEY'");
  sub.add_option("--model", o->model, "model name for requests (default: the first of /v1/models)");
  sub.add_option("--wait", o->wait_s, "wait up to SECONDS for /health (or /v1/models) to say ready")
      ->check(CLI::NonNegativeNumber);
  sub.add_option("--suite", o->suite, "smoke, full, or check names separated by commas")->capture_default_str();
  sub.add_option("--json", o->json_path, "write a JSON report to FILE");
  sub.add_option("--junit", o->junit_path, "write a JUnit XML report to FILE");
  sub.add_option("--timeout", o->timeout_s, "per-request timeout in SECONDS")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  sub.add_option("--concurrency", o->concurrency, "parallel requests of the concurrency check")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  sub.add_option("--long-context", o->long_context_tokens, "filler TOKENS of the long-context check")
      ->check(CLI::Range(64, 10000000))
      ->capture_default_str();
  sub.add_option("--max-thinking-tokens", o->max_thinking_tokens, "max_tokens of the thinking arithmetic check")
      ->check(CLI::Range(16, 1000000))
      ->capture_default_str();
  sub.add_flag("--no-color", *no_color, "no ANSI colour even on a terminal");
  // --suite numerics (checks_numerics.cc).
  NumericsOptions& n = o->numerics;
  sub.add_option("--reference-model", n.reference.model_dir,
                 "numerics: run this checkpoint in process (tern's engine) as the reference");
  sub.add_option("--reference-numerics", n.reference.numerics,
                 "numerics: what the deployment's activations are, which sets the reference and the judging: auto "
                 "(ask the deployment: tern says; others are judged as f32), full (f32: position by position), "
                 "bf16 (rounded to BF16, as on GPUs and tern's amx/avx512-bf16 paths: judged against BF16-rounded "
                 "references), w4a4 (Blackwell's NVFP4 GEMM; FP8 layers W8A8) or w4a8 (tern's --quant-numerics w4a8: "
                 "NVFP4 layers' inputs as 8-bit integers; the reference quantizes them the same way, with the "
                 "deployment's KV cache dtype)")
      ->check(CLI::IsMember({"auto", "full", "bf16", "w4a4", "w4a8", "w4a16", "w8a8", "w8a16"}))
      ->capture_default_str();
  sub.add_option("--rounded-references", n.rounded_references,
                 "numerics: BF16-rounded variants of the reference that judge a BF16 deployment's prompt past the "
                 "thresholds (each one more scoring of it; 0: judge position by position)")
      ->check(CLI::Range(0, kBf16RoundedVariants))
      ->capture_default_str();
  sub.add_option("--reference-threads", n.reference.threads, "numerics: threads of the reference (0: all cores)");
  sub.add_option("--reference-url", n.reference_url, "numerics: another deployment as the reference");
  sub.add_option("--prompts", n.prompts_file,
                 "numerics: prompts file, one a line: {\"messages\": [...], \"thinking\": bool} or {\"prompt\": "
                 "\"raw text\"} or plain text (a user message); default: the built-in set");
  sub.add_option("--tokens", n.tokens, "numerics: greedy tokens per prompt")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  sub.add_option("--top-logprobs", n.top_logprobs, "numerics: k of the top-k logprobs asked for")
      ->check(CLI::Range(1, 20))
      ->capture_default_str();
  // Thresholds: the defaults of the reference's numerics (numerics_compare.h) unless given.
  auto th = std::make_shared<NumericsThresholds>();
  std::vector<std::pair<CLI::Option*, double NumericsThresholds::*>> th_opts = {
      {sub.add_option("--max-kl", th->kl_max,
                      "numerics: fail a position whose KL lower bound exceeds this (default 0.05; w4a4: 10)"),
       &NumericsThresholds::kl_max},
      {sub.add_option("--max-mean-kl", th->kl_mean,
                      "numerics: fail a prompt whose mean KL exceeds this (default 0.005; w4a4: 0.15)"),
       &NumericsThresholds::kl_mean},
      {sub.add_option("--max-logprob-gap", th->gap_max,
                      "numerics: fail a position where a top-k token of probability >= 1e-3 differs by more nats "
                      "(default 0.5; w4a4: 30)"),
       &NumericsThresholds::gap_max},
      {sub.add_option("--tie-margin", th->tie_margin,
                      "numerics: a top-1 disagreement is a near-tie (allowed) below this reference margin in nats "
                      "(default 0.25; w4a4: 1)"),
       &NumericsThresholds::tie_margin}};
  for (auto& [opt, field] : th_opts) opt->check(CLI::NonNegativeNumber);
  return [o, no_color, th, th_opts]() {
    CheckOptions opts = *o;
    const std::string& num = opts.numerics.reference.numerics;
    opts.numerics.thresholds = num == "w4a4" || num == "w8a8" ? W4A4Thresholds() : NumericsThresholds{};
    opts.numerics.quantized_thresholds = W4A4Thresholds();
    for (const auto& [opt, field] : th_opts)
      if (opt->count() > 0) {
        opts.numerics.thresholds.*field = (*th).*field;
        opts.numerics.quantized_thresholds.*field = (*th).*field;
      }
    opts.color = !*no_color && ColorWanted(STDOUT_FILENO);
    return RunCheckCommand(opts);
  };
}

}  // namespace tern::check
