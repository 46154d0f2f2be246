#include "app/numerics_reference.h"

#include <fmt/format.h>

#include <chrono>

#include "app/session.h"
#include "chat/chat_prompt.h"
#include "engine/engine.h"
#include "engine/run_to_completion.h"
#include "kernels/cpu_features.h"
#include "kernels/ops.h"

namespace tern::app {
namespace {

class EngineReference : public check::LogprobReference {
 public:
  EngineReference(std::unique_ptr<Session> s, ChatPrompt chat, std::string numerics, int variants, DType kv)
      : s_(std::move(s)), chat_(std::move(chat)), numerics_(std::move(numerics)), variants_(variants), kv_(kv) {}

  std::string Describe() const override {
    return fmt::format("tern engine in process, {} ({} numerics, {} KV cache)", s_->dir, numerics_, DTypeName(kv_));
  }

  Result<std::vector<int32_t>> Tokenize(const check::NumericsPrompt& p) override {
    if (p.messages.is_null()) return s_->tokenizer->Encode(p.text, /*add_special_tokens=*/true);
    ChatPrompt::Input in;
    in.messages = nlohmann::ordered_json::parse(p.messages.dump());
    in.kwargs = {{"enable_thinking", p.thinking}, {"thinking", p.thinking}};
    TERN_ASSIGN_OR_RETURN(std::string text, chat_.Render(in));
    return s_->tokenizer->Encode(text, /*add_special_tokens=*/false);  // as the server tokenizes a chat prompt
  }

  // One prefill-only request (max_tokens 0) scoring tokens[first:]; each row
  // is reduced to what the comparison needs as it arrives, so at most one
  // engine step's rows (kPromptLogitsBytes) are held.
  Result<std::vector<check::PositionLogprobs>> Score(const std::vector<int32_t>& tokens, int64_t first, int top_k,
                                                     const std::vector<std::vector<int32_t>>& want) override {
    EngineRequest req{.id = "numerics-reference", .prompt = tokens, .max_tokens = 0, .top_logprobs = top_k,
                      .return_logits = true, .prompt_logprob_start = first};
    req.sampling.temperature = 0;
    EngineOptions eo = OfflineEngineOptions(*s_->model, {req}, {.kv = {.dtype = kv_}, .enable_prefix_cache = false});
    TERN_ASSIGN_OR_RETURN(auto engine, Engine::Create(*s_->model, eo));
    SubmitResult sub = engine->Submit(std::move(req));
    if (!sub.stream) return Status::Errorf("the reference engine refused the sequence: {}", sub.error);
    std::vector<check::PositionLogprobs> out;
    for (;;) {
      RequestUpdate u;
      if (!sub.stream->Next(u, std::chrono::milliseconds(1000))) continue;
      for (TokenOutput& t : u.prompt_logprobs) {
        check::PositionLogprobs p;
        p.position = first + int64_t(out.size());
        p.token = t.id;
        p.logprob = t.logprob;
        for (const auto& [id, lp] : t.top) p.top.emplace_back(id, lp);
        // log-softmax of any id from the row: logit - (logit[token] - logprob[token]).
        const double lse = double(t.logits[size_t(t.id)]) - double(t.logprob);
        const size_t w = size_t(p.position - first);
        if (w < want.size())
          for (int32_t id : want[w])
            if (id >= 0 && size_t(id) < t.logits.size()) p.extra.emplace_back(id, double(t.logits[size_t(id)]) - lse);
        out.push_back(std::move(p));
      }
      if (!u.finished) continue;
      if (u.reason == FinishReason::kAbort) return Status::Errorf("the reference engine: {}", u.message);
      break;
    }
    if (int64_t(out.size()) != int64_t(tokens.size()) - first)
      return Status::Errorf("the reference engine scored {} positions of {}", out.size(), int64_t(tokens.size()) - first);
    return out;
  }

  int RoundedVariants() const override { return variants_; }

  // Score under seed variant + 1 of the stochastic BF16 rounding (ops.h),
  // which is process-wide: this process runs nothing else meanwhile.
  Result<std::vector<check::PositionLogprobs>> ScoreRounded(int variant, const std::vector<int32_t>& tokens,
                                                            int64_t first, int top_k,
                                                            const std::vector<std::vector<int32_t>>& want) override {
    if (variant < 0 || variant >= variants_)
      return Status::Errorf("BF16-rounded variant {} of {}", variant, variants_);
    struct Seed {
      explicit Seed(uint64_t s) { kernels::SetStochasticBf16Seed(s); }
      ~Seed() { kernels::SetStochasticBf16Seed(0); }
    } seed(uint64_t(variant) + 1);
    return Score(tokens, first, top_k, want);
  }

  std::string TokenText(int32_t id) const override {
    auto t = s_->tokenizer->Decode(std::span<const int32_t>(&id, 1), false);
    return t.ok() ? *t : std::string();
  }

 private:
  std::unique_ptr<Session> s_;
  ChatPrompt chat_;
  std::string numerics_;
  int variants_;  // BF16-rounded variants (0 under w4a4 and w4a8)
  DType kv_;      // the KV cache's dtype (ReferenceModelSpec::kv_cache_dtype)
};

}  // namespace

Result<std::unique_ptr<check::LogprobReference>> LoadEngineReference(const check::ReferenceModelSpec& spec) {
  // The reference runs in this process, its activations in f32 on any CPU path (the most exact
  // reference the CPU computes; cpu_features.h). full and bf16 differ in how the deployment is
  // judged (check/numerics_compare.h): bf16 also scores with BF16-rounded variants (ops.h's
  // stochastic rounding, on every CPU). w4a4 quantizes activations as Blackwell's NVFP4 GEMM does,
  // w4a8 NVFP4 layers' inputs to 8 bits as `--quant-numerics w4a8` does (the same values: ops.h
  // QuantizeInt8Activations).
  const bool quantized = spec.numerics == "w4a4" || spec.numerics == "w8a8";
  const bool int8 = spec.numerics == "w4a8";
  if (!quantized && !int8 && spec.numerics != "full" && spec.numerics != "bf16" && spec.numerics != "w4a16" &&
      spec.numerics != "w8a16")
    return Status::Errorf("--reference-numerics {}: use auto, full, bf16, w4a4 or w4a8", spec.numerics);
  TERN_RETURN_IF_ERROR(kernels::SetActivations("f32"));
  const ActivationNumerics num = quantized ? ActivationNumerics::kGpuQuantized
                                 : int8    ? ActivationNumerics::kInt8
                                           : ActivationNumerics::kFull;
  auto session = Session::Open(spec.model_dir, spec.threads, /*need_tokenizer=*/true, num);
  if (!session.ok()) return Status::Errorf("--reference-model {}: {}", spec.model_dir, session.status().message());
  auto chat = ChatPrompt::Load(spec.model_dir);
  if (!chat.ok()) return Status::Errorf("--reference-model {}: {}", spec.model_dir, chat.status().message());
  // A KV cache dtype tern does not have (another server's, e.g. fp8_e5m2): F32, as for every
  // other reference (the description says which).
  auto kv = (*session)->KvDtype(spec.kv_cache_dtype);
  return std::unique_ptr<check::LogprobReference>(
      new EngineReference(std::move(*session), std::move(*chat), quantized ? "w4a4" : int8 ? "w4a8" : "full",
                          quantized || int8 ? 0 : check::kBf16RoundedVariants, kv.ok() ? *kv : DType::kF32));
}

}  // namespace tern::app
