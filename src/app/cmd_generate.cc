// `tern generate`: one prompt, one completion, on the CPU.
#include <cstdio>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "app/commands.h"
#include "app/model_files.h"
#include "app/mtp_tap.h"
#include "app/session.h"
#include "base/npy.h"
#include "engine/generate.h"
#include "engine/stop_strings.h"
#include "tokenize/stream_decoder.h"

namespace tern::app {

Command RegisterGenerate(CLI::App& app) {
  struct Opts {
    std::string model, prompt, prompt_ids, logits_out, mtp_logits_out, kv_dtype = "auto";
    std::vector<std::string> stop;
    bool chat = false, ignore_eos = false;
    std::string chat_kwargs;
    int64_t max_tokens = 64, prefill_chunk = 512;
    size_t threads = 0;
    std::optional<double> temperature, top_p, min_p, repetition_penalty;
    std::optional<int64_t> top_k;
    std::optional<uint64_t> seed;
  };
  auto o = std::make_shared<Opts>();
  app.add_option("--model", o->model, "model directory (default: the bundled demo model)")->default_val(BundledModelDir());
  auto* prompt = app.add_option("--prompt", o->prompt, "prompt text");
  auto* ids = app.add_option("--prompt-ids", o->prompt_ids, "prompt token ids, comma-separated (prints generated ids)");
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
  app.add_option("--logits-out", o->logits_out, "write float32 logits [steps, vocab] to this .npy file");
  app.add_option("--mtp-logits-out", o->mtp_logits_out,
                 "also run the model's MTP head (Qwen3.5 / Qwen3-Next mtp.*) on every position and write float32 "
                 "logits [steps, vocab] to this .npy file: row i from the hidden state that chose generated token "
                 "i and that token, predicting token i + 1");
  app.add_option("--prefill-chunk", o->prefill_chunk, "prompt tokens per forward pass")->default_val(512);
  app.add_option("--threads", o->threads, "worker threads (0: all cores)")->default_val(0);
  auto numerics = AddQuantNumericsOption(app);
  app.add_option("--kv-cache-dtype", o->kv_dtype, "KV cache dtype: auto, f32, f16, bf16, fp8_e4m3")->default_val("auto");
  return [o, prompt, ids, numerics]() {
    auto num = numerics();
    if (!num.ok()) return Fail("generate: " + num.status().message());
    if (!*prompt && !*ids) return Fail("generate: give --prompt or --prompt-ids");
    if (o->max_tokens <= 0) return Fail("generate: --max-tokens must be positive");
    auto session = Session::Open(o->model, o->threads, /*need_tokenizer=*/!*ids || !o->stop.empty(), *num);
    if (!session.ok()) return Fail(session.status().message());
    Session& s = **session;

    GenerateRequest req;
    if (*ids) {
      if (o->chat) return Fail("generate: --chat needs --prompt, not --prompt-ids");
      auto parsed = ParseIds(o->prompt_ids);
      if (!parsed.ok()) return Fail(parsed.status().message());
      req.prompt = std::move(*parsed);
    } else {
      auto text = o->chat ? s.RenderChatPrompt(o->prompt, o->chat_kwargs) : Result<std::string>(o->prompt);
      if (!text.ok()) return Fail(text.status().message());
      auto enc = s.tokenizer->Encode(*text, /*add_special_tokens=*/!o->chat);
      if (!enc.ok()) return Fail(enc.status().message());
      req.prompt = std::move(*enc);
    }
    req.max_tokens = o->max_tokens;
    req.prefill_chunk = o->prefill_chunk;
    req.sampling = s.DefaultSampling();
    if (o->temperature) req.sampling.temperature = *o->temperature;
    if (o->top_p) req.sampling.top_p = *o->top_p;
    if (o->top_k) req.sampling.top_k = *o->top_k;
    if (o->min_p) req.sampling.min_p = *o->min_p;
    if (o->repetition_penalty) req.sampling.repetition_penalty = *o->repetition_penalty;
    req.sampling.seed = o->seed;
    if (!o->ignore_eos) req.stop_token_ids = s.eos_token_ids;
    const int64_t context = s.model->config().max_position_embeddings;
    if (context > 0 && int64_t(req.prompt.size()) >= context)
      return Fail(fmt::format("generate: the prompt has {} tokens; the context length is {}", req.prompt.size(), context));
    if (context > 0) req.max_tokens = std::min<int64_t>(req.max_tokens, context - int64_t(req.prompt.size()));

    auto cache = s.MakeCache(int64_t(req.prompt.size()) + req.max_tokens, o->kv_dtype, !o->mtp_logits_out.empty());
    if (!cache.ok()) return Fail(cache.status().message());
    BlockAllocator blocks((*cache)->num_blocks());

    const int64_t V = s.model->config().vocab_size;
    std::vector<float> logits_rows;
    std::optional<StreamDecoder> stream;
    const bool print_text = !*ids;
    if (s.tokenizer) stream.emplace(*s.tokenizer, /*skip_special_tokens=*/true);
    StopStringMatcher stops(o->stop);
    auto on_token = [&](int32_t tok, std::span<const float> logits) {
      if (!o->logits_out.empty()) logits_rows.insert(logits_rows.end(), logits.begin(), logits.end());
      if (!stream) return true;
      const bool stopped = stops.Append(stream->Push(tok));
      if (print_text) {
        fmt::print("{}", stops.TakeReady());
        std::fflush(stdout);
      }
      return !stopped;
    };
    std::optional<MtpTap> tap;
    Status tap_status;
    Model* model = s.model.get();
    if (!o->mtp_logits_out.empty()) {
      if (s.model->mtp_num_layers() == 0)
        return Fail(fmt::format("generate: --mtp-logits-out: {} has no MTP head", o->model));
      model = &tap.emplace(*s.model, int64_t(req.prompt.size()) - 1);
    }
    auto result = Generate(*model, **cache, blocks, req, [&](int32_t tok, std::span<const float> logits) {
      if (tap) {
        tap_status = tap->OnToken(tok);
        if (!tap_status.ok()) return false;
      }
      return on_token(tok, logits);
    });
    if (!result.ok()) return Fail(result.status().message());
    if (!tap_status.ok()) return Fail("generate: MTP head: " + tap_status.message());
    if (print_text) {
      if (!stops.stopped()) stops.Append(stream->Flush());
      fmt::print("{}\n", stops.TakeRest());
    } else {
      fmt::print("[{}]\n", fmt::join(result->tokens, ","));
    }
    if (!o->logits_out.empty()) {
      const int64_t rows = int64_t(logits_rows.size()) / V;
      Status st = WriteNpyF32(o->logits_out, logits_rows, {rows, V});
      if (!st.ok()) return Fail(st.message());
    }
    if (tap) {
      const int64_t rows = int64_t(tap->logits().size()) / V;
      Status st = WriteNpyF32(o->mtp_logits_out, tap->logits(), {rows, V});
      if (!st.ok()) return Fail(st.message());
    }
    fmt::print(stderr, "tern: {} prompt tokens, {} generated ({}), prefill {:.1f} tok/s, decode {:.1f} tok/s\n",
               req.prompt.size(), result->tokens.size(), result->finish_reason,
               double(req.prompt.size()) / std::max(result->prefill_seconds, 1e-9),
               double(result->tokens.size() > 1 ? result->tokens.size() - 1 : 0) / std::max(result->decode_seconds, 1e-9));
    return 0;
  };
}

}  // namespace tern::app
