// `tern bench`: prefill and decode speed of a model, with the bytes of weights
// read per decoded token and the memory bandwidth measured in the same run.
#include <algorithm>
#include <chrono>
#include <random>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "app/bandwidth.h"
#include "app/commands.h"
#include "app/parallel.h"
#include "app/session.h"
#include "base/mapped_file.h"
#include "dist/runtime.h"
#include "engine/run_to_completion.h"
#include "kernels/cpu_features.h"
#include "kernels/simd_target.h"

namespace tern::app {
namespace {

// Runs of the bandwidth probes further apart than this (fastest over slowest)
// say that the host's bandwidth moved while it was measured. A steady host's
// seven runs agree within a few percent (the AMD Zen 4 VM of the kernels
// README: 1.04-1.08x within one of its two levels, 1.9x across them).
constexpr double kSteadyBandwidthSpread = 1.3;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

struct RunTimes {
  double prefill_s = 0, decode_s = 0;
};

// One prefill of `prompt` and `gen` greedy decode steps through the engine,
// timed by the engine's own step times.
EngineRequest BenchRequest(const std::vector<int32_t>& prompt, int64_t gen) {
  EngineRequest req{.id = "bench", .prompt = prompt, .max_tokens = gen + 1};  // the first token comes from the prefill
  req.sampling.temperature = 0;
  return req;
}

Result<RunTimes> RunOnce(Engine& engine, const std::vector<int32_t>& prompt, int64_t gen) {
  TERN_ASSIGN_OR_RETURN(std::vector<CompletedRequest> done, RunToCompletion(engine, {BenchRequest(prompt, gen)}));
  if (int64_t(done[0].tokens.size()) != gen + 1) return Status::Error("bench: generation ended early (context length)");
  return RunTimes{done[0].prefill_seconds(), done[0].decode_seconds()};
}

// Times `reps` x 1000 all-reduces of n floats over every rank (rank 0 reports).
int BenchAllReduce(int64_t n, int reps) {
  // Every rank is here, none loads a model: the startup agreement that the
  // model commands make is this one (app/parallel.h: FinishRanks).
  if (Status st = dist::AgreeOnStatus(Status::Ok()); !st.ok()) return Fail(st.message());
  dist::Comm& world = dist::World();
  std::vector<float> buf(size_t(n), 1.0f);
  std::vector<double> us;
  constexpr int kCalls = 1000;
  for (int r = 0; r < reps + 1; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kCalls; ++i) world.AllReduceSum(buf.data(), n);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r > 0) us.push_back(s * 1e6 / kCalls);  // (the first round warms up)
  }
  if (world.rank() == 0)
    fmt::print("all-reduce       {} floats over {} ranks ({}): median {:.1f} us per call ({} x {} calls)\n", n,
               world.size(), dist::LibraryVersion(), Median(us), reps, kCalls);
  return 0;
}

}  // namespace

Command RegisterBench(CLI::App& app) {
  struct Opts {
    std::string model, json_out, kv_dtype = "auto";
    int64_t prompt_tokens = 512, gen_tokens = 64, chunk = 512;
    size_t threads = 0;
    int reps = 3;
    bool bandwidth_only = false;
    bool huge_pages = false;
    int64_t allreduce_floats = 0;
  };
  auto o = std::make_shared<Opts>();
  app.add_option("--model", o->model, "model directory");
  app.add_option("--prompt-tokens", o->prompt_tokens, "prompt length")->default_val(512);
  app.add_option("--gen-tokens", o->gen_tokens, "tokens to decode")->default_val(64);
  app.add_option("--prefill-chunk", o->chunk, "prompt tokens per forward")->default_val(512);
  app.add_option("--threads", o->threads, "threads (0: all cores)")->default_val(0);
  auto numerics = AddQuantNumericsOption(app);
  auto par = AddParallelOptions(app);
  app.add_option("--reps", o->reps, "measured repetitions (medians are reported)")->default_val(3);
  app.add_option("--kv-cache-dtype", o->kv_dtype, "KV cache dtype: auto, f32, f16, bf16, fp8_e4m3")->default_val("auto");
  app.add_flag("--bandwidth", o->bandwidth_only, "only measure the memory read bandwidth");
  app.add_flag("--huge-pages", o->huge_pages,
               "hold the weights in huge pages (serve's --huge-pages) and take decode's share of the bandwidth read "
               "from huge pages (--bandwidth measures both page sizes either way)");
  app.add_option("--allreduce", o->allreduce_floats,
                 "only measure the all-reduce of this many floats across the ranks of an mpirun job (a decode "
                 "step of a --tp model makes two per layer, of hidden_size floats per sequence)");
  app.add_option("--json", o->json_out, "also write the results as JSON to this file");
  return [o, numerics, par]() {
    auto num = numerics();
    if (!num.ok()) return Fail("bench: " + num.status().message());
    if (o->allreduce_floats > 0) return BenchAllReduce(o->allreduce_floats, o->reps);
    if (IsWorkerRank() && !o->bandwidth_only)
      return RunShardWorker(o->model, {.threads = o->threads, .numerics = *num, .tp = par->tp, .ep = par->ep});
    if (o->bandwidth_only) {
      ThreadPool pool(o->threads);
      for (bool huge : {false, true}) {
        BandwidthResult bw = MeasureReadBandwidth(pool, int64_t(512) << 20, 7, huge);
        fmt::print("memory read bandwidth ({} threads, {}): median {:.1f} GB/s, best {:.1f} GB/s, slowest {:.1f} GB/s\n",
                   pool.size(), !huge ? "4 KiB pages" : bw.huge_pages ? "huge pages" : "huge pages refused: 4 KiB pages",
                   bw.median_gbps, bw.best_gbps, bw.slowest_gbps);
      }
      return 0;
    }
    if (o->model.empty()) return Fail("bench: --model is required (or --bandwidth)");
    if (o->prompt_tokens <= 0 || o->gen_tokens <= 0 || o->reps <= 0 || o->chunk <= 0)
      return Fail("bench: --prompt-tokens, --gen-tokens, --prefill-chunk and --reps must be positive");
    auto session = Session::Open(o->model, o->threads, /*need_tokenizer=*/false, *num, par->tp, par->ep, o->huge_pages);
    if (!session.ok()) return Fail(session.status().message());
    Model& model = *(*session)->model;
    const ModelConfig& cfg = model.config();
    std::mt19937 rng(1234);
    std::vector<int32_t> prompt(size_t(o->prompt_tokens));
    for (auto& t : prompt) t = int32_t(rng() % uint32_t(cfg.vocab_size));
    auto kv_dtype = (*session)->KvDtype(o->kv_dtype);
    if (!kv_dtype.ok()) return Fail(kv_dtype.status().message());
    // No prefix cache: every repetition computes the whole prompt.
    auto engine = Engine::Create(model, OfflineEngineOptions(model, {BenchRequest(prompt, o->gen_tokens)},
                                                             {.chunked_prefill_size = o->chunk,
                                                              .kv = {.dtype = *kv_dtype},
                                                              .enable_prefix_cache = false}));
    if (!engine.ok()) return Fail("bench: " + engine.status().message());

    fmt::print(stderr, "tern bench: warming up (pages in the weights)\n");
    auto warm = RunOnce(**engine, prompt, std::min<int64_t>(o->gen_tokens, 8));
    if (!warm.ok()) return Fail(warm.status().message());
    // The weights have all been read: whether they came in huge pages (copied with --huge-pages, or mapped
    // from a page cache that holds them in 2 MiB folios: MappedFile::Open), so the probe reads the same.
    const int64_t huge_at_start = HugePageBytes();
    const bool weights_huge = huge_at_start >= 0 && huge_at_start >= int64_t(model.WeightBytes()) / 2;
    // (the engine is idle between runs: the bandwidth probe has the model's pool to itself)
    BandwidthResult bw = MeasureReadBandwidth(model.pool(), int64_t(512) << 20, 7, weights_huge);
    std::vector<double> prefill, decode;
    for (int r = 0; r < o->reps; ++r) {
      auto t = RunOnce(**engine, prompt, o->gen_tokens);
      if (!t.ok()) return Fail(t.status().message());
      prefill.push_back(double(o->prompt_tokens) / t->prefill_s);
      decode.push_back(double(o->gen_tokens) / t->decode_s);
    }
    BandwidthResult bw2 = MeasureReadBandwidth(model.pool(), int64_t(512) << 20, 7, weights_huge);
    // The other page size too: what the weights would see held the other way.
    const BandwidthResult bw_other = MeasureReadBandwidth(model.pool(), int64_t(512) << 20, 7, !weights_huge);
    const ComputePeaks peaks = MeasureComputePeaks(model.pool());
    const double bw_gbps = Median({bw.median_gbps, bw2.median_gbps, std::max(bw.median_gbps, bw2.median_gbps)});
    const double prefill_tps = Median(prefill), decode_tps = Median(decode);
    const double bytes_per_tok = double(model.WeightBytesPerToken());
    // Per-sequence memory beside the weights: the fixed recurrent state of
    // linear-attention layers (conv + delta-rule state) and KV per token.
    const CacheSpec spec = model.cache_spec();
    const int64_t kv_per_token = KvCache::BytesPerToken(spec, *kv_dtype);
    // What a decode step reads besides the weights: the KV cache of its context
    // (step i of the run attends to prompt + i + 1 positions: on average
    // prompt + (gen + 1) / 2) and the recurrent state, read and written back.
    const double mean_context = double(o->prompt_tokens) + double(o->gen_tokens + 1) / 2;
    const double kv_read_per_tok = mean_context * double(kv_per_token);
    const double state_per_tok = 2.0 * double(spec.recurrent_state_bytes);
    const double moved_per_tok = bytes_per_tok + kv_read_per_tok + state_per_tok;
    const double read_gbps = moved_per_tok * decode_tps / 1e9;
    fmt::print("model            {} ({}, {} layers, hidden {}, {})\n", o->model, cfg.model_type, cfg.num_hidden_layers,
               cfg.hidden_size, cfg.torch_dtype.empty() ? "?" : cfg.torch_dtype);
    fmt::print("threads          {}   cpu path {}\n", model.pool().size(), kernels::CpuPathDescription());
    const int64_t huge_bytes = AnonHugePageBytes(), file_pmd_bytes = FilePmdMappedBytes();
    fmt::print("memory           {:.1f} MB of weights held, {:.1f} MB resident after the runs{}\n",
               double(model.WeightBytes()) / 1e6, double(ResidentBytes()) / 1e6,
               huge_bytes < 0 || file_pmd_bytes < 0
                   ? std::string(" (huge pages: unknown)")
                   : fmt::format(" ({:.1f} MB in huge pages: {:.1f} copied, {:.1f} mapped from the files)",
                                 double(huge_bytes + file_pmd_bytes) / 1e6, double(huge_bytes) / 1e6,
                                 double(file_pmd_bytes) / 1e6));
    if (par->tp > 1 || par->ep > 1)  // (the other ranks print their own memory when they stop)
      fmt::print("ranks            tp {} ep {}: the figures above are rank 0's (weights/token: its share)\n", par->tp,
                 par->ep);
    fmt::print("prefill          {:.1f} tokens/s  ({} tokens, chunk {}, median of {})\n", prefill_tps, o->prompt_tokens,
               o->chunk, o->reps);
    fmt::print("decode           {:.2f} tokens/s  ({} tokens after the prompt, median of {})\n", decode_tps,
               o->gen_tokens, o->reps);
    // Prefill's share of the compute ceiling of the path it runs on (AMX tiles
    // on amx, VDPBF16PS on avx512-bf16, f32 FMAs otherwise), at the prompt's mean context.
    const double flops_per_tok = model.PrefillFlopsPerToken(double(o->prompt_tokens) / 2);
    const double prefill_gflops = flops_per_tok * prefill_tps * 1e-9;
    std::string other_peaks;
    if (peaks.amx_gflops > 0) other_peaks += fmt::format(", AMX BF16 {:.0f} GFLOP/s", peaks.amx_gflops);
    if (peaks.bf16dot_gflops > 0) other_peaks += fmt::format(", VDPBF16PS {:.0f} GFLOP/s", peaks.bf16dot_gflops);
    fmt::print("compute peaks    FMA {:.0f} GFLOP/s{} (measured in this run)\n", peaks.fma_gflops, other_peaks);
    if (flops_per_tok > 0)
      fmt::print("prefill compute  {:.0f} GFLOP/s of matrix products ({:.2f} GFLOP per token) = {:.0f}% of the {} peak\n",
                 prefill_gflops, flops_per_tok * 1e-9, 100.0 * prefill_gflops / peaks.GemmPeak(),
                 peaks.GemmPeakName());
    fmt::print("weights/token    {:.1f} MB read per decoded token\n", bytes_per_tok / 1e6);
    fmt::print("cache/token      {:.2f} MB of KV cache read (mean context {:.1f}) + {:.2f} MB of recurrent state read "
               "and written per decoded token\n",
               kv_read_per_tok / 1e6, mean_context, state_per_tok / 1e6);
    fmt::print("decode reads     {:.1f} GB/s = {:.0f}% of the measured bandwidth {:.1f} GB/s (weights and cache; "
               "roofline {:.1f} tokens/s)\n",
               read_gbps, 100.0 * read_gbps / bw_gbps, bw_gbps, bw_gbps * 1e9 / moved_per_tok);
    const bool other_huge = !weights_huge && bw_other.huge_pages;
    fmt::print("bandwidth        {:.1f} GB/s from {} (the weights'; median of two probes), {:.1f} GB/s from {} (one)\n",
               bw_gbps, !weights_huge ? "4 KiB pages" : bw.huge_pages ? "huge pages" : "4 KiB pages (huge refused)",
               bw_other.median_gbps,
               weights_huge ? "4 KiB pages" : other_huge ? "huge pages (--huge-pages)" : "4 KiB pages (huge refused)");
    // A host whose bandwidth moves while it is measured (another tenant, a
    // VM whose memory bandwidth flips between two levels within a second:
    // the AMD Zen 4 VM of src/kernels/README.md read mostly 30-36 or 52-62
    // GB/s in probes of 0.1 s) makes the share above a comparison across levels: the
    // decode runs last seconds and may have run at either. Said, not hidden.
    const double slowest = std::min(bw.slowest_gbps, bw2.slowest_gbps);
    const double fastest = std::max(bw.best_gbps, bw2.best_gbps);
    if (slowest > 0 && fastest > kSteadyBandwidthSpread * slowest)
      fmt::print("bandwidth moved  the probes' runs read {:.1f} to {:.1f} GB/s: the host's bandwidth changed while it "
                 "was measured, so decode may have run at another level than the share above assumes\n",
                 slowest, fastest);
    fmt::print("state/sequence   {:.2f} MB recurrent ({} linear-attention layers) + {:.1f} KB KV per token ({} attention "
               "layers, {})\n",
               double(spec.recurrent_state_bytes) / 1e6, cfg.num_hidden_layers - spec.attention_layers,
               double(kv_per_token) / 1e3, spec.attention_layers, DTypeName(*kv_dtype));
    if (!o->json_out.empty()) {
      nlohmann::json j = {{"model", o->model}, {"threads", model.pool().size()},
                          {"recurrent_state_bytes", spec.recurrent_state_bytes}, {"kv_bytes_per_token", kv_per_token},
                          {"simd", kernels::SimdTargetName()}, {"cpu_path", kernels::CpuPathName()}, {"prompt_tokens", o->prompt_tokens},
                          {"gen_tokens", o->gen_tokens}, {"prefill_tokens_per_s", prefill_tps},
                          {"decode_tokens_per_s", decode_tps}, {"weight_bytes_per_token", bytes_per_tok},
                          {"kv_read_bytes_per_token", kv_read_per_tok}, {"state_bytes_per_token", state_per_tok},
                          {"bandwidth_gbps", bw_gbps}, {"decode_read_gbps", read_gbps},
                          {"bandwidth_slowest_gbps", slowest}, {"bandwidth_fastest_gbps", fastest},
                          {"huge_pages", o->huge_pages}, {"bandwidth_other_pages_gbps", bw_other.median_gbps},
                          {"anon_huge_page_bytes", huge_bytes}, {"file_pmd_mapped_bytes", file_pmd_bytes},
                          {"weights_in_huge_pages", weights_huge},
                          {"roofline_fraction", read_gbps / bw_gbps}, {"prefill_all", prefill}, {"decode_all", decode},
                          {"fma_peak_gflops", peaks.fma_gflops}, {"amx_peak_gflops", peaks.amx_gflops},
                          {"bf16dot_peak_gflops", peaks.bf16dot_gflops},
                          {"prefill_gflops", prefill_gflops}, {"prefill_flops_per_token", flops_per_tok}};
      Status s = WriteStringToFile(o->json_out, j.dump(2) + "\n");
      if (!s.ok()) return Fail(s.message());
    }
    return 0;
  };
}

}  // namespace tern::app
