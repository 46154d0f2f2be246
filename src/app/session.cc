#include "app/session.h"

#include <filesystem>

#include <fmt/format.h>

#include "chat/chat_prompt.h"
#include "chat/vocab_check.h"

namespace tern::app {

Result<std::unique_ptr<Session>> Session::Open(const std::string& dir, size_t threads, bool need_tokenizer,
                                               ActivationNumerics numerics, int tp, int ep, bool huge_pages) {
  auto s = std::make_unique<Session>();
  s->dir = dir;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return Status::Errorf("model directory {} does not exist", dir);
  const std::string tok_path = (std::filesystem::path(dir) / "tokenizer.json").string();
  if (need_tokenizer || std::filesystem::exists(tok_path, ec)) {
    TERN_ASSIGN_OR_RETURN(Tokenizer t, Tokenizer::FromFile(tok_path));
    s->tokenizer.emplace(std::move(t));
  }
  TERN_ASSIGN_OR_RETURN(s->generation, LoadGenerationDefaults(dir));
  TERN_ASSIGN_OR_RETURN(s->model, LoadModel(dir, LoadOptions{.threads = threads, .numerics = numerics, .tp = tp, .ep = ep, .huge_pages = huge_pages}));
  if (s->tokenizer) TERN_RETURN_IF_ERROR(CheckTokenizerFitsModel(*s->tokenizer, s->model->config().vocab_size, dir));
  s->eos_token_ids = s->generation.eos_token_ids.empty() ? s->model->config().eos_token_ids : s->generation.eos_token_ids;
  return s;
}

SamplingParams Session::DefaultSampling() const {
  SamplingParams p;
  if (generation.do_sample.has_value() && !*generation.do_sample) {
    p.temperature = 0;
    return p;
  }
  if (generation.temperature) p.temperature = *generation.temperature;
  if (generation.top_p) p.top_p = *generation.top_p;
  if (generation.top_k) p.top_k = *generation.top_k;
  if (generation.min_p) p.min_p = *generation.min_p;
  if (generation.repetition_penalty) p.repetition_penalty = *generation.repetition_penalty;
  return p;
}

Result<DType> Session::KvDtype(const std::string& kv_dtype) const {
  TERN_ASSIGN_OR_RETURN(DType d, ParseKvCacheDtype(kv_dtype, model->weight_dtype()));
  if (d == DType::kF8E4M3 && !model->HasKvCacheScales())
    fmt::print(stderr, "tern: warning: {} has no k_scale/v_scale for every layer; the FP8 KV cache uses 1.0 there\n",
               dir);
  return d;
}

Result<std::string> Session::RenderChatPrompt(const std::string& user_message, const std::string& kwargs_json) const {
  TERN_ASSIGN_OR_RETURN(ChatPrompt chat, ChatPrompt::Load(dir));
  ChatPrompt::Input in;
  in.messages = nlohmann::ordered_json::array({{{"role", "user"}, {"content", user_message}}});
  if (!kwargs_json.empty()) {
    in.kwargs = nlohmann::ordered_json::parse(kwargs_json, nullptr, /*allow_exceptions=*/false);
    if (!in.kwargs.is_object())
      return Status::Errorf("--chat-template-kwargs must be a JSON object, got: {}", kwargs_json);
  }
  return chat.Render(in);
}

}  // namespace tern::app
