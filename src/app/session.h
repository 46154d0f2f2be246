// Session: a loaded model directory — weights, tokenizer, chat template,
// generation defaults — as the commands use it.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "engine/sampler.h"
#include "model/config.h"
#include "model/model.h"
#include "tokenize/tokenizer.h"

namespace tern::app {

struct Session {
  std::string dir;
  std::unique_ptr<Model> model;
  std::optional<Tokenizer> tokenizer;
  GenerationDefaults generation;
  std::vector<int32_t> eos_token_ids;  // generation_config's, else config's

  // need_tokenizer: fail when tokenizer.json is missing or bad (else load it if present).
  static Result<std::unique_ptr<Session>> Open(const std::string& dir, size_t threads, bool need_tokenizer,
                                               ActivationNumerics numerics = ActivationNumerics::kFull,
                                               int tp = 1, int ep = 1, bool huge_pages = false);

  // Sampling defaults from generation_config.json (greedy when it says do_sample false).
  SamplingParams DefaultSampling() const;
  // The KV cache dtype a command's --kv-cache-dtype names: "auto" (F32 for F32
  // weights, else F16, as llama.cpp), "f32", "f16", "bf16" or "fp8_e4m3" (with a
  // warning when the checkpoint lacks k_scale / v_scale).
  Result<DType> KvDtype(const std::string& kv_dtype) const;
  // The prompt text for one user message under the model's chat template.
  // kwargs_json: chat_template_kwargs as a JSON object (e.g. {"enable_thinking": false}), or empty.
  Result<std::string> RenderChatPrompt(const std::string& user_message, const std::string& kwargs_json = "") const;
};

}  // namespace tern::app
