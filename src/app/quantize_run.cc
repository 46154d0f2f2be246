#include "app/quantize_run.h"

#include <map>
#include <memory>

#include <fmt/format.h>

#include "app/session.h"
#include "engine/block_allocator.h"
#include "engine/run_to_completion.h"
#include "model/decoder.h"

namespace tern::app {
namespace {

struct Calibration {
  std::map<std::string, float> input_amax, kv_amax;
};

// Runs the prompt through the model with an observer on every Linear (input
// amax by module name) and on every attention layer's cached K and V.
// all_logits: lm_head is to be quantized, so its observer must see every row.
Result<Calibration> Calibrate(Session& s, const std::vector<int32_t>& ids, bool all_logits) {
  auto* model = dynamic_cast<DecoderModel*>(s.model.get());
  if (model == nullptr) return Status::Error("quantize: calibration supports decoder models only");
  std::map<std::string, std::unique_ptr<ActivationObserver>> observers, kv;
  model->ForEachLinear([&](Linear& l) {
    auto& o = observers[l.name];
    if (!o) o = std::make_unique<ActivationObserver>();
    l.observer = o.get();
  });
  for (DecoderLayer& layer : model->layers) {
    if (layer.linear_attn) continue;  // (no KV cache)
    AttentionBlock& a = layer.attention;
    const std::string attn = a.q_proj.name.substr(0, a.q_proj.name.rfind('.'));  // "...self_attn"
    a.k_observer = (kv[attn + "|k"] = std::make_unique<ActivationObserver>()).get();
    a.v_observer = (kv[attn + "|v"] = std::make_unique<ActivationObserver>()).get();
  }
  // One prefill through the engine (an F32 KV cache: the observers see the
  // keys and values at the precision they were computed in).
  // With all_logits, every position's logits (prompt logprobs from position
  // 1, and the last row's), so lm_head's observer sees all rows as in
  // ModelOpt's calibration forward, not only the last one a plain prefill
  // computes logits for (an lm_head left in BF16 needs none of them).
  EngineRequest req{.id = "calibration", .prompt = ids, .max_tokens = 1, .prompt_logprob_start = all_logits ? 0 : -1};
  req.sampling.temperature = 0;
  Result<std::vector<CompletedRequest>> r = Status::Error("");
  {
    auto engine = Engine::Create(*s.model, OfflineEngineOptions(*s.model, {req},
                                                                {.kv = {.dtype = DType::kF32},
                                                                 .enable_prefix_cache = false}));
    r = engine.ok() ? RunToCompletion(**engine, {req}) : Result<std::vector<CompletedRequest>>(engine.status());
  }
  model->ForEachLinear([](Linear& l) { l.observer = nullptr; });
  for (DecoderLayer& layer : model->layers) layer.attention.k_observer = layer.attention.v_observer = nullptr;
  if (!r.ok()) return r.status().WithContext("quantize: calibration run");
  Calibration c;
  for (const auto& [name, o] : observers) c.input_amax[name] = o->amax;
  for (const auto& [name, o] : kv) c.kv_amax[name] = o->amax;
  return c;
}

}  // namespace

const std::string& DefaultCalibrationText() {
  static const std::string kText =
      "The history of the lighthouse begins with fires lit on hilltops to guide ships at night. Over the centuries, "
      "towers of stone replaced them, and lenses made their light visible for twenty miles or more.\n\n"
      "User: Can you explain how a hash table works?\nAssistant: A hash table stores key-value pairs in an array. A "
      "hash function maps each key to an index; collisions are resolved by chaining or open addressing, so lookups "
      "take constant time on average.\n\n"
      "def fibonacci(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a\n\n"
      "Shopping list: 3 apples, 12 eggs, 2 litres of milk, 500 g of flour. Total: 14.75 EUR.\n"
      "17 x 19 = 323; 45 + 78 = 123; 96 - 38 = 58; sqrt(144) = 12.\n"
      "La mer est calme ce matin. Der Himmel ist blau. El tren sale a las ocho.\n"
      "{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\", \"unit\": \"celsius\"}}\n"
      "In 1969, astronauts landed on the Moon; the mission lasted eight days, three hours and eighteen minutes.\n";
  return kText;
}

Result<std::string> RunQuantize(QuantizeRun run) {
  const bool needs_scales = run.options.format != CheckpointQuant::kFp8Block;
  if (needs_scales) {
    TERN_ASSIGN_OR_RETURN(std::unique_ptr<Session> s, Session::Open(run.in_dir, run.threads, /*need_tokenizer=*/false));
    std::vector<int32_t> ids = run.calibration_ids;
    if (ids.empty()) {
      if (!s->tokenizer)
        return Status::Errorf("quantize: {} has no tokenizer.json; give --calibration-ids", run.in_dir);
      const std::string& text = run.calibration_text.empty() ? DefaultCalibrationText() : run.calibration_text;
      TERN_ASSIGN_OR_RETURN(ids, s->tokenizer->Encode(text));
    }
    const int64_t vocab = s->model->config().vocab_size;
    for (int32_t id : ids)
      if (id < 0 || id >= vocab)
        return Status::Errorf("quantize: calibration token id {} is outside the vocabulary [0, {})", id, vocab);
    if (ids.empty()) return Status::Error("quantize: the calibration prompt is empty");
    TERN_ASSIGN_OR_RETURN(Calibration c, Calibrate(*s, ids, run.options.quantize_lm_head));
    run.options.input_amax = std::move(c.input_amax);
    run.options.kv_amax = std::move(c.kv_amax);
  }
  return QuantizeCheckpoint(run.in_dir, run.out_dir, run.options);
}

}  // namespace tern::app
