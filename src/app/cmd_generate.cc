// `tern generate`: prompts run to completion through the engine the server runs.
#include <cstdio>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "app/commands.h"
#include "app/parallel.h"
#include "app/model_files.h"
#include "app/mtp_tap.h"
#include "app/session.h"
#include "base/npy.h"
#include "engine/run_to_completion.h"
#include "engine/stop_strings.h"
#include "tokenize/stream_decoder.h"

namespace tern::app {

namespace {

// PATH for one prompt; PATH with ".npy" replaced by ".I.npy" for prompt I of several.
std::string PerPromptPath(const std::string& path, size_t i, size_t n) {
  if (n == 1) return path;
  const std::string stem = path.size() > 4 && path.ends_with(".npy") ? path.substr(0, path.size() - 4) : path;
  return fmt::format("{}.{}.npy", stem, i);
}

}  // namespace

Command RegisterGenerate(CLI::App& app) {
  struct Opts {
    std::string model, prompt, logits_out, mtp_logits_out, kv_dtype = "auto";
    std::vector<std::string> prompt_ids, stop;
    bool chat = false, ignore_eos = false, disable_radix_cache = false, mtp_all_rows = false;
    std::string chat_kwargs;
    int64_t max_tokens = 64, prefill_chunk = 512, max_running = 64, max_total_tokens = 0, page_size = 16;
    size_t threads = 0;
    std::optional<double> temperature, top_p, min_p, repetition_penalty;
    std::optional<int64_t> top_k;
    std::optional<uint64_t> seed;
  };
  auto o = std::make_shared<Opts>();
  app.add_option("--model", o->model, "model directory (default: the bundled demo model)")->default_val(BundledModelDir());
  auto* prompt = app.add_option("--prompt", o->prompt, "prompt text");
  auto* ids = app.add_option("--prompt-ids", o->prompt_ids,
                             "prompt token ids, comma-separated (prints generated ids); repeat it to run several "
                             "prompts at once through the engine, one line of ids each");
  prompt->excludes(ids);
  app.add_flag("--chat", o->chat, "wrap the prompt as one user message with the model's chat template");
  app.add_option("--chat-template-kwargs", o->chat_kwargs,
                 "with --chat: template variables as a JSON object, e.g. '{\"enable_thinking\": false}'");
  app.add_option("--max-tokens", o->max_tokens, "tokens to generate")->default_val(64);
  app.add_option("--temperature", o->temperature, "sampling temperature (0: greedy); default from generation_config.json");
  app.add_option("--top-p", o->top_p, "nucleus sampling mass");
  app.add_option("--top-k", o->top_k, "sample from the k most likely tokens");
  app.add_option("--min-p", o->min_p, "drop tokens below min_p times the top probability");
  app.add_option("--repetition-penalty", o->repetition_penalty, "HF repetition penalty");
  app.add_option("--seed", o->seed, "random seed (same seed, same output)");
  app.add_option("--stop", o->stop, "stop string (repeatable)");
  app.add_flag("--ignore-eos", o->ignore_eos, "keep generating past end-of-sequence tokens");
  app.add_option("--logits-out", o->logits_out,
                 "write float32 logits [steps, vocab] to this .npy file (with several prompts: PATH.I.npy for "
                 "prompt I, PATH without .npy)");
  app.add_option("--mtp-logits-out", o->mtp_logits_out,
                 "also run the model's MTP head (Qwen3.5 / Qwen3-Next mtp.*) on every position and write float32 "
                 "logits [steps, vocab] to this .npy file: row i from the hidden state that chose generated token "
                 "i and that token, predicting token i + 1 (one prompt)");
  app.add_flag("--mtp-logits-all-rows", o->mtp_all_rows,
               "with --mtp-logits-out: keep the head's rows from the first prompt position on (row p from the "
               "hidden state at p and token p + 1, predicting token p + 2), for teacher-forced agreement");
  app.add_option("--prefill-chunk", o->prefill_chunk, "prompt tokens per engine step (--chunked-prefill-size)")
      ->default_val(512);
  app.add_option("--max-running-requests", o->max_running, "sequences the engine runs at once")->default_val(64);
  app.add_option("--max-total-tokens", o->max_total_tokens,
                 "KV cache capacity in tokens (0: every prompt at full length; less makes the engine retract "
                 "and recompute sequences)")
      ->default_val(0);
  app.add_option("--page-size", o->page_size, "tokens per KV cache page")->default_val(16);
  app.add_flag("--disable-radix-cache", o->disable_radix_cache, "do not reuse the KV cache of shared prompt prefixes");
  app.add_option("--threads", o->threads, "worker threads (0: all cores)")->default_val(0);
  auto numerics = AddQuantNumericsOption(app);
  auto par = AddParallelOptions(app);
  app.add_option("--kv-cache-dtype", o->kv_dtype, "KV cache dtype: auto, f32, f16, bf16, fp8_e4m3")->default_val("auto");
  auto spec = AddSpeculativeOptions(app);
  return [o, prompt, ids, numerics, par, spec]() {
    auto num = numerics();
    if (!num.ok()) return Fail("generate: " + num.status().message());
    auto sp = spec();
    if (!sp.ok()) return Fail("generate: " + sp.status().message());
    if (IsWorkerRank())
      return RunShardWorker(o->model, {.threads = o->threads, .numerics = *num, .tp = par->tp, .ep = par->ep});
    if (!*prompt && !*ids) return Fail("generate: give --prompt or --prompt-ids");
    if (o->max_tokens <= 0) return Fail("generate: --max-tokens must be positive");
    if (o->page_size <= 0 || o->max_running <= 0 || o->prefill_chunk <= 0 || o->max_total_tokens < 0)
      return Fail("generate: --page-size, --max-running-requests and --prefill-chunk must be positive");
    auto session = Session::Open(o->model, o->threads, /*need_tokenizer=*/!*ids || !o->stop.empty(), *num,
                                 par->tp, par->ep);
    if (!session.ok()) return Fail(session.status().message());
    Session& s = **session;

    std::vector<std::vector<int32_t>> prompts;
    if (*ids) {
      if (o->chat) return Fail("generate: --chat needs --prompt, not --prompt-ids");
      for (const std::string& text : o->prompt_ids) {
        auto parsed = ParseIds(text);
        if (!parsed.ok()) return Fail(parsed.status().message());
        prompts.push_back(std::move(*parsed));
      }
    } else {
      auto text = o->chat ? s.RenderChatPrompt(o->prompt, o->chat_kwargs) : Result<std::string>(o->prompt);
      if (!text.ok()) return Fail(text.status().message());
      auto enc = s.tokenizer->Encode(*text, /*add_special_tokens=*/!o->chat);
      if (!enc.ok()) return Fail(enc.status().message());
      prompts.push_back(std::move(*enc));
    }
    if (!o->mtp_logits_out.empty() && prompts.size() != 1)
      return Fail("generate: --mtp-logits-out takes one prompt");
    if (o->mtp_all_rows && o->mtp_logits_out.empty()) return Fail("generate: --mtp-logits-all-rows needs --mtp-logits-out");
    const int64_t context = s.model->config().max_position_embeddings;
    std::vector<EngineRequest> reqs;
    for (size_t i = 0; i < prompts.size(); ++i) {
      if (context > 0 && int64_t(prompts[i].size()) >= context)
        return Fail(fmt::format("generate: the prompt has {} tokens; the context length is {}", prompts[i].size(),
                                context));
      EngineRequest req{.id = fmt::format("generate-{}", i), .prompt = prompts[i], .max_tokens = o->max_tokens,
                        .return_logits = !o->logits_out.empty()};
      req.sampling = s.DefaultSampling();
      if (o->temperature) req.sampling.temperature = *o->temperature;
      if (o->top_p) req.sampling.top_p = *o->top_p;
      if (o->top_k) req.sampling.top_k = *o->top_k;
      if (o->min_p) req.sampling.min_p = *o->min_p;
      if (o->repetition_penalty) req.sampling.repetition_penalty = *o->repetition_penalty;
      req.sampling.seed = o->seed;
      if (!o->ignore_eos) req.stop_token_ids = s.eos_token_ids;
      reqs.push_back(std::move(req));
    }

    auto kv_dtype = s.KvDtype(o->kv_dtype);
    if (!kv_dtype.ok()) return Fail(kv_dtype.status().message());
    std::optional<MtpTap> tap;
    Model* model = s.model.get();
    if (!o->mtp_logits_out.empty()) {
      if (s.model->mtp_num_layers() == 0)
        return Fail(fmt::format("generate: --mtp-logits-out: {} has no MTP head", o->model));
      if (sp->algorithm == SpeculativeAlgorithm::kNextn)
        return Fail("generate: --mtp-logits-out runs the MTP head itself; not with --speculative-algorithm NEXTN");
      // The tap runs the head as the engine feeds it each chunk (and the last token, below).
      model = &tap.emplace(*s.model, o->mtp_all_rows ? 0 : int64_t(prompts[0].size()) - 1);
    }
    EngineOptions eo = OfflineEngineOptions(
        *model, reqs,
        {.max_running_requests = o->max_running,
         .chunked_prefill_size = o->prefill_chunk,
         .kv = {.block_size = int32_t(o->page_size),
                .num_blocks = o->max_total_tokens > 0 ? BlocksFor(o->max_total_tokens, o->page_size) : 0,
                .dtype = *kv_dtype},
         .enable_prefix_cache = !o->disable_radix_cache,
         .speculative = *sp});
    auto engine = Engine::Create(*model, eo);
    if (!engine.ok()) return Fail("generate: " + engine.status().message());

    // Text: streamed to stdout as it decodes (one prompt), cut at a stop string.
    std::optional<StreamDecoder> stream;
    const bool print_text = !*ids;
    if (s.tokenizer) stream.emplace(*s.tokenizer, /*skip_special_tokens=*/true);
    StopStringMatcher stops(o->stop);
    auto on_token = [&](size_t, const TokenOutput& t) {
      if (!stream) return true;
      const bool stopped = stops.Append(stream->Push(t.id));
      if (print_text) {
        fmt::print("{}", stops.TakeReady());
        std::fflush(stdout);
      }
      return !stopped;
    };
    const bool observe = stream && (print_text || !o->stop.empty());
    auto done = RunToCompletion(**engine, std::move(reqs), observe ? TokenObserver(on_token) : TokenObserver());
    if (!done.ok()) return Fail("generate: " + done.status().message());
    if (tap && !(*done)[0].tokens.empty()) {
      // The engine is idle now: the head's last row waits for the last token.
      if (Status st = tap->OnToken((*done)[0].tokens.back().id); !st.ok()) return Fail("generate: MTP head: " + st.message());
    }
    const int64_t V = s.model->config().vocab_size;
    for (size_t i = 0; i < done->size(); ++i) {
      const CompletedRequest& r = (*done)[i];
      if (print_text) {
        if (!stops.stopped()) stops.Append(stream->Flush());
        fmt::print("{}\n", stops.TakeRest());
      } else {
        fmt::print("[{}]\n", fmt::join(r.ids(), ","));
      }
      if (!o->logits_out.empty()) {
        std::vector<float> rows;
        rows.reserve(r.tokens.size() * size_t(V));
        for (const TokenOutput& t : r.tokens) rows.insert(rows.end(), t.logits.begin(), t.logits.end());
        Status st = WriteNpyF32(PerPromptPath(o->logits_out, i, done->size()), rows, {int64_t(r.tokens.size()), V});
        if (!st.ok()) return Fail(st.message());
      }
      const char* why = r.reason == FinishReason::kLength ? "length" : "stop";
      fmt::print(stderr, "tern: {} prompt tokens, {} generated ({}), prefill {:.1f} tok/s, decode {:.1f} tok/s\n",
                 prompts[i].size(), r.tokens.size(), why, double(prompts[i].size()) / std::max(r.prefill_seconds(), 1e-9),
                 double(r.tokens.size() > 1 ? r.tokens.size() - 1 : 0) / std::max(r.decode_seconds(), 1e-9));
    }
    if (tap) {
      const int64_t rows = int64_t(tap->logits().size()) / V;
      Status st = WriteNpyF32(o->mtp_logits_out, tap->logits(), {rows, V});
      if (!st.ok()) return Fail(st.message());
    }
    if ((*engine)->metrics().retractions_total.load() > 0)
      fmt::print(stderr, "tern: the engine retracted and recomputed {} sequences (KV pool of {} tokens)\n",
                 (*engine)->metrics().retractions_total.load(), (*engine)->max_total_tokens());
    if (const EngineMetrics& m = (*engine)->metrics(); m.spec_verifies_total.load() > 0)
      fmt::print(stderr, "tern: speculative decoding kept {} of {} drafts over {} verify forwards ({:.2f} tokens each)\n",
                 m.spec_accepted_tokens_total.load(), m.spec_draft_tokens_total.load(), m.spec_verifies_total.load(),
                 double(m.spec_accepted_tokens_total.load() + m.spec_verifies_total.load()) /
                     double(m.spec_verifies_total.load()));
    return 0;
  };
}

}  // namespace tern::app
