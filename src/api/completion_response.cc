// /v1/completions and native /generate bodies (serving_completions.py,
// tokenizer_manager meta_info).
#include "api/responses.h"

namespace tern::api {
namespace {

Json MatchedStop(const FinishReason& f) {
  if (f.kind != FinishReason::Kind::kStop) return nullptr;
  if (const auto* id = std::get_if<int32_t>(&f.matched)) return *id;
  if (const auto* s = std::get_if<std::string>(&f.matched)) return *s;
  return nullptr;
}

Json CompletionChoiceJson(int index, std::string_view text, const FinishReason* finish,
                          const std::vector<TokenLogprob>* logprobs,
                          const std::vector<TokenLogprob>* prompt_logprobs = nullptr) {
  Json c = Json::object();
  c["index"] = index;
  c["text"] = text;
  c["logprobs"] = logprobs ? CompletionLogprobsJson(*logprobs) : Json(nullptr);
  c["finish_reason"] = finish ? Json(FinishReasonType(*finish)) : Json(nullptr);
  c["matched_stop"] = finish ? MatchedStop(*finish) : Json(nullptr);
  if (prompt_logprobs) c["prompt_logprobs"] = PromptLogprobsJson(*prompt_logprobs);
  return c;
}

// SGLang's [logprob|null, id, text|null] and, per position, null or a list of them.
Json LogprobTriple(bool null_logprob, float logprob, int32_t id, const std::string& text, bool with_text) {
  return Json::array({null_logprob ? Json(nullptr) : Json(logprob), id, with_text ? Json(text) : Json(nullptr)});
}
void AppendNativeLogprobs(const std::vector<TokenLogprob>& toks, bool with_text, Json& tokens, Json& tops) {
  for (const auto& t : toks) {
    tokens.push_back(LogprobTriple(t.null_logprob, t.logprob, t.id, t.token, with_text));
    if (t.null_logprob) {
      tops.push_back(nullptr);
      continue;
    }
    Json top = Json::array();
    for (const auto& c : t.top) top.push_back(LogprobTriple(false, c.logprob, c.id, c.token, with_text));
    tops.push_back(std::move(top));
  }
}

Json Header(const ResponseMeta& meta) {
  Json j = Json::object();
  j["id"] = meta.id;
  j["object"] = "text_completion";
  j["created"] = meta.created;
  j["model"] = meta.model;
  return j;
}

}  // namespace

Json CompletionJson(const ResponseMeta& meta, const std::vector<CompletionChoice>& choices,
                    const Usage& usage) {
  Json j = Header(meta);
  Json arr = Json::array();
  for (size_t i = 0; i < choices.size(); ++i)
    arr.push_back(CompletionChoiceJson(static_cast<int>(i), choices[i].text, &choices[i].finish,
                                       choices[i].logprobs ? &*choices[i].logprobs : nullptr,
                                       choices[i].prompt_logprobs ? &*choices[i].prompt_logprobs : nullptr));
  j["choices"] = std::move(arr);
  j["usage"] = UsageJson(usage);
  j["metadata"] = Json{{"weight_version", meta.weight_version}};
  return j;
}

std::string CompletionStreamEncoder::Chunk(int index, std::string_view text, const FinishReason* finish,
                                           const std::vector<TokenLogprob>* logprobs,
                                           const Usage* usage) const {
  Json j = Header(meta_);
  j["choices"] = Json::array({CompletionChoiceJson(index, text, finish, logprobs)});
  j["usage"] = usage ? UsageJson(*usage) : Json(nullptr);
  return SseEvent(j);
}

std::string CompletionStreamEncoder::UsageChunk(const Usage& usage) const {
  Json j = Header(meta_);
  j["choices"] = Json::array();
  Json u = UsageJson(usage);
  if (u["prompt_tokens_details"].is_null()) u.erase("prompt_tokens_details");  // exclude_none
  j["usage"] = std::move(u);
  return SseEvent(j);
}

Json GenerateJson(const GenerateOutput& out) {
  Json meta = Json::object();
  meta["id"] = out.id;
  meta["finish_reason"] = out.finish ? FinishReasonJson(*out.finish) : Json(nullptr);
  meta["prompt_tokens"] = out.prompt_tokens;
  meta["weight_version"] = out.weight_version;
  meta["total_retractions"] = 0;
  meta["completion_tokens"] = out.completion_tokens;
  meta["cached_tokens"] = out.cached_tokens;
  if (out.logprobs) {
    Json tokens = Json::array(), tops = Json::array(), in_tokens = Json::array(), in_tops = Json::array();
    AppendNativeLogprobs(*out.logprobs, out.text_in_logprobs, tokens, tops);
    if (out.input_logprobs) AppendNativeLogprobs(*out.input_logprobs, out.text_in_logprobs, in_tokens, in_tops);
    meta["input_token_logprobs"] = std::move(in_tokens);
    meta["output_token_logprobs"] = std::move(tokens);
    if (out.top_logprobs_num > 0) {
      meta["input_top_logprobs"] = std::move(in_tops);
      meta["output_top_logprobs"] = std::move(tops);
    }
  }
  if (out.e2e_latency) meta["e2e_latency"] = *out.e2e_latency;
  Json j = Json::object();
  j["text"] = out.text;
  j["output_ids"] = out.output_ids;
  j["meta_info"] = std::move(meta);
  if (out.index) j["index"] = *out.index;
  return j;
}

}  // namespace tern::api
