#include "check/numerics_client.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <optional>

#include "check/json_text.h"

namespace tern::check {
namespace {

using nlohmann::json;

// A logprob as sent: a finite number, or nonfinite (NaN/Infinity became null
// when the reply was sanitized; a null or a string where a number belongs).
struct Value {
  double v = 0;
  bool ok = false;
};
Value NumberAt(const json& j) {
  if (!j.is_number()) return {};
  const double v = j.get<double>();
  return {v, std::isfinite(v)};
}

bool NotThere(int status) { return status == 404 || status == 405 || status == 501; }

std::string ErrorText(const HttpReply& r) { return fmt::format("HTTP {}: {}", r.status, Excerpt(r.body, 300)); }

// SGLang's [logprob, id, text] triple into (id, logprob).
bool Triple(const json& t, int32_t* id, Value* lp) {
  if (!t.is_array() || t.size() < 2 || !t[1].is_number_integer()) return false;
  *id = t[1].get<int32_t>();
  *lp = NumberAt(t[0]);
  return true;
}

// One position from SGLang's token triple and its top list (null or [[lp, id, text], ...]).
PositionLogprobs SglangPosition(int64_t position, const json& token, const json& top, bool expect_logprob) {
  PositionLogprobs p;
  p.position = position;
  Value lp;
  if (!Triple(token, &p.token, &lp)) {
    p.nonfinite = true;
    return p;
  }
  if (lp.ok) p.logprob = lp.v;
  else if (expect_logprob) p.nonfinite = true;
  if (top.is_array()) {
    for (const json& t : top) {
      int32_t id;
      Value v;
      if (!Triple(t, &id, &v)) continue;
      if (!v.ok) p.nonfinite = true;
      else p.top.emplace_back(id, v.v);
    }
  }
  return p;
}

// A token id: an integer in [0, 2^31).
std::optional<int32_t> TokenId(const json& v) {
  auto id = JsonInt(v);
  if (!id || *id < 0 || *id > INT32_MAX) return std::nullopt;
  return int32_t(*id);
}

// "token_id:123" (vLLM's return_tokens_as_token_ids); -1 otherwise.
int32_t IdFromTokenName(const std::string& s) {
  constexpr std::string_view kPrefix = "token_id:";
  if (s.rfind(kPrefix, 0) != 0) return -1;
  try {
    size_t used = 0;
    const long v = std::stol(s.substr(kPrefix.size()), &used);
    return used + kPrefix.size() == s.size() && v >= 0 && v <= INT32_MAX ? int32_t(v) : -1;
  } catch (...) {
    return -1;
  }
}

// vLLM's prompt_logprobs entry {"<id>": {"logprob","rank","decoded_token"}} at `position` whose token is `token`.
PositionLogprobs VllmPromptPosition(int64_t position, int32_t token, const json& entry, int top_k) {
  PositionLogprobs p;
  p.position = position;
  p.token = token;
  if (!entry.is_object()) {
    p.nonfinite = true;
    return p;
  }
  std::vector<std::tuple<int64_t, int32_t, double>> ranked;
  for (auto it = entry.begin(); it != entry.end(); ++it) {
    int32_t id = -1;
    try {
      id = std::stoi(it.key());
    } catch (...) {
      continue;
    }
    const Value v = NumberAt(JsonField(it.value(), "logprob"));
    if (!v.ok) {
      p.nonfinite = true;
      continue;
    }
    if (id == token) p.logprob = v.v;
    const int64_t rank = JsonInt(it.value(), "rank").value_or(INT64_MAX);
    if (rank <= top_k) ranked.emplace_back(rank, id, v.v);
  }
  std::sort(ranked.begin(), ranked.end());
  for (const auto& [rank, id, lp] : ranked) p.top.emplace_back(id, lp);
  if (!p.logprob) p.nonfinite = true;
  return p;
}

json Greedy(int max_tokens) { return {{"temperature", 0}, {"max_new_tokens", max_tokens}}; }

}  // namespace

Result<std::vector<int64_t>> AlignSentTokens(const std::vector<int32_t>& generated, const std::vector<int32_t>& sent) {
  const size_t n = generated.size(), m = sent.size();
  std::vector<int64_t> left(m), right(m);
  size_t g = 0;
  for (size_t i = 0; i < m; ++i, ++g) {  // leftmost matching
    while (g < n && generated[g] != sent[i]) ++g;
    if (g == n)
      return Status::Errorf("logprob entry {} (id {}) is not among the {} generated ids after the previous entry's", i,
                            sent[i], n);
    left[i] = int64_t(g);
  }
  int64_t h = int64_t(n) - 1;
  for (size_t i = m; i-- > 0; --h) {  // rightmost matching (exists: the leftmost one does)
    while (generated[size_t(h)] != sent[i]) --h;
    right[i] = h;
  }
  std::vector<int64_t> at(m);
  for (size_t i = 0; i < m; ++i) at[i] = left[i] == right[i] ? left[i] : -1;
  return at;
}

DeploymentClient::DeploymentClient(const HttpClient& http, const ServerInfo& server) : http_(http), server_(server) {}

std::string DeploymentClient::ApiDescription(int top_k) const {
  switch (api_) {
    case LogprobApi::kSglangGenerate:
      return fmt::format("SGLang /generate (return_logprob, top_logprobs_num {}, input_token_logprobs from "
                         "logprob_start_len 0)",
                         top_k);
    case LogprobApi::kVllmCompletions:
      return fmt::format("vLLM /v1/completions (logprobs {0}, prompt_logprobs {0}, return_tokens_as_token_ids)", top_k);
    case LogprobApi::kLlamaCpp:
      return fmt::format("llama.cpp /completion (n_probs {}; generated tokens only)", top_k);
    case LogprobApi::kUnknown:
      break;
  }
  return "no logprob API found";
}

Result<DeploymentRun> DeploymentClient::Request(LogprobApi api, const std::vector<int32_t>& tokens, int max_tokens,
                                                int top_k, int64_t score_from, bool* absent) {
  if (absent) *absent = false;
  const auto t0 = std::chrono::steady_clock::now();
  json body;
  const char* path = "";
  const int64_t n = int64_t(tokens.size());
  if (api == LogprobApi::kSglangGenerate) {
    path = "/generate";
    body = {{"input_ids", tokens},         {"sampling_params", Greedy(max_tokens)},
            {"return_logprob", true},      {"top_logprobs_num", top_k},
            {"logprob_start_len", score_from >= 0 ? std::max<int64_t>(score_from - 1, 0) : n - 1},
            {"return_text_in_logprobs", false}};
  } else if (api == LogprobApi::kVllmCompletions) {
    path = "/v1/completions";
    body = {{"model", server_.model},    {"prompt", tokens},   {"max_tokens", std::max(max_tokens, 1)},
            {"temperature", 0},           {"logprobs", top_k}, {"return_tokens_as_token_ids", true},
            {"skip_special_tokens", false}};
    if (score_from >= 0) body["prompt_logprobs"] = top_k;
  } else {
    path = "/completion";
    body = {{"prompt", tokens},   {"n_predict", max_tokens}, {"temperature", 0}, {"n_probs", top_k},
            {"cache_prompt", false}, {"return_tokens", true}, {"post_sampling_probs", false}};
  }
  auto reply = http_.PostJson(path, body.dump());
  if (!reply.ok()) return Status::Errorf("POST {}: {}", path, reply.status().message());
  if (reply->status != 200) {
    if (absent) *absent = NotThere(reply->status);
    return Status::Errorf("POST {}: {}", path, ErrorText(*reply));
  }
  SanitizedJson info;
  auto j = ParseJsonLenient(reply->body, &info);
  if (!j) return Status::Errorf("POST {}: the reply is not JSON: {}", path, Excerpt(reply->body, 200));
  DeploymentRun run;
  run.nonfinite_json = info.nonfinite;

  if (api == LogprobApi::kSglangGenerate) {
    const json& r = j->is_array() && !j->empty() ? (*j)[0] : *j;
    const json& meta = JsonField(r, "meta_info");
    const json& out = JsonField(meta, "output_token_logprobs");
    const json& out_top = JsonField(meta, "output_top_logprobs");
    if (!out.is_array()) return Status::Errorf("POST /generate: no meta_info.output_token_logprobs in the reply");
    const json& in = JsonField(meta, "input_token_logprobs");
    const json& in_top = JsonField(meta, "input_top_logprobs");
    if (score_from >= 0 && in.is_array() && !in.empty()) {
      const int64_t start = std::max<int64_t>(score_from - 1, 0);
      for (size_t i = 1; i < in.size(); ++i) {  // entry 0 has no logprob (SGLang's layout)
        const int64_t pos = start + int64_t(i);
        if (pos < score_from || pos >= n) continue;
        PositionLogprobs p = SglangPosition(pos, in[i], in_top.is_array() && i < in_top.size() ? in_top[i] : json(),
                                            /*expect_logprob=*/true);
        if (p.token != tokens[size_t(pos)]) p.nonfinite = true;  // misaligned: cannot be trusted
        run.positions.push_back(std::move(p));
      }
      run.prompt_scored = !run.positions.empty();
    }
    for (size_t i = 0; i < out.size(); ++i) {
      PositionLogprobs p = SglangPosition(n + int64_t(i), out[i], out_top.is_array() && i < out_top.size() ? out_top[i] : json(),
                                          /*expect_logprob=*/true);
      run.output.push_back(p.token);
      run.positions.push_back(std::move(p));
    }
  } else if (api == LogprobApi::kVllmCompletions) {
    const json& choices = JsonField(*j, "choices");
    const json choice = choices.is_array() && !choices.empty() ? choices[0] : json();
    const json& lps = JsonField(choice, "logprobs");
    const json& toks = JsonField(lps, "tokens");
    const json& vals = JsonField(lps, "token_logprobs");
    const json& tops = JsonField(lps, "top_logprobs");
    if (!toks.is_array() || !vals.is_array())
      return Status::Errorf("POST /v1/completions: no choices[0].logprobs.tokens in the reply");
    const json& prompt_lps = JsonField(choice, "prompt_logprobs");
    if (score_from >= 0 && prompt_lps.is_array()) {
      for (size_t i = 1; i < prompt_lps.size() && int64_t(i) < n; ++i) {
        if (int64_t(i) < score_from) continue;
        run.positions.push_back(VllmPromptPosition(int64_t(i), tokens[i], prompt_lps[i], top_k));
      }
      run.prompt_scored = !run.positions.empty();
    }
    // max_tokens is at least 1 (vLLM); a reference run (max_tokens 0) drops the token it had to generate.
    const size_t keep = max_tokens == 0 ? 0 : toks.size();
    for (size_t i = 0; i < keep; ++i) {
      PositionLogprobs p;
      p.position = n + int64_t(i);
      p.token = toks[i].is_string() ? IdFromTokenName(toks[i].get<std::string>()) : -1;
      if (p.token < 0)
        return Status::Errorf(
            "POST /v1/completions: logprob tokens are text ({}), not \"token_id:<id>\": the server does not support "
            "return_tokens_as_token_ids",
            Excerpt(toks[i].dump(), 40));
      const Value v = i < vals.size() ? NumberAt(vals[i]) : Value{};
      if (v.ok) p.logprob = v.v;
      else p.nonfinite = true;
      if (tops.is_array() && i < tops.size() && tops[i].is_object()) {
        for (auto it = tops[i].begin(); it != tops[i].end(); ++it) {
          const Value tv = NumberAt(it.value());
          const int32_t id = IdFromTokenName(it.key());
          if (!tv.ok) p.nonfinite = true;
          else if (id >= 0) p.top.emplace_back(id, tv.v);
        }
        std::stable_sort(p.top.begin(), p.top.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
      }
      run.output.push_back(p.token);
      run.positions.push_back(std::move(p));
    }
  } else {
    const json& probs = JsonField(*j, "completion_probabilities");
    if (!probs.is_array()) return Status::Errorf("POST /completion: no completion_probabilities in the reply");
    const json& generated = JsonField(*j, "tokens");
    if (!generated.is_array())
      return Status::Error("POST /completion: no \"tokens\" in the reply (return_tokens; an older llama.cpp), so its "
                           "logprobs cannot be placed: entries skip tokens that end inside a UTF-8 character");
    for (const json& t : generated) {
      auto id = TokenId(t);
      if (!id) return Status::Errorf("POST /completion: \"tokens\" holds {}, not a token id", Excerpt(t.dump(), 40));
      run.output.push_back(*id);
    }
    std::vector<int32_t> sent;
    for (const json& e : probs) {
      auto id = TokenId(JsonField(e, "id"));
      if (!id) return Status::Errorf("POST /completion: completion_probabilities without token ids (an older llama.cpp)");
      sent.push_back(*id);
    }
    auto at = AlignSentTokens(run.output, sent);
    if (!at.ok()) return Status::Errorf("POST /completion: {}", at.status().message());
    run.unscored_output = int64_t(run.output.size());
    for (size_t i = 0; i < probs.size(); ++i) {
      if ((*at)[i] < 0) continue;  // ambiguous placement: not compared
      const json& e = probs[i];
      PositionLogprobs p;
      p.position = n + (*at)[i];
      p.token = sent[i];
      const Value v = NumberAt(JsonField(e, "logprob"));
      if (v.ok) p.logprob = v.v;
      else p.nonfinite = true;
      const json& top = JsonField(e, "top_logprobs");
      if (top.is_array())
        for (const json& t : top) {
          auto tid = TokenId(JsonField(t, "id"));
          const Value tv = NumberAt(JsonField(t, "logprob"));
          if (!tv.ok) p.nonfinite = true;
          else if (tid) p.top.emplace_back(*tid, tv.v);
        }
      --run.unscored_output;
      run.positions.push_back(std::move(p));
    }
  }
  if (run.nonfinite_json > 0 && !run.positions.empty()) {
    bool marked = false;
    for (const auto& p : run.positions) marked = marked || p.nonfinite;
    if (!marked) run.positions.front().nonfinite = true;  // a NaN somewhere we did not read: say so
  }
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return run;
}

Result<DeploymentRun> DeploymentClient::Continue(const std::vector<int32_t>& prompt, int max_tokens, int top_k) {
  std::vector<LogprobApi> order;
  if (api_ != LogprobApi::kUnknown) order = {api_};
  else if (server_.dialect == "vllm") order = {LogprobApi::kVllmCompletions};
  else if (server_.dialect == "llama.cpp") order = {LogprobApi::kLlamaCpp};
  else if (server_.dialect == "sglang" || server_.dialect == "tern" || server_.dialect == "sglang-like")
    order = {LogprobApi::kSglangGenerate};
  else order = {LogprobApi::kSglangGenerate, LogprobApi::kVllmCompletions, LogprobApi::kLlamaCpp};
  std::string tried;
  for (LogprobApi a : order) {
    bool absent = false;
    auto r = Request(a, prompt, max_tokens, top_k, /*score_from=*/1, &absent);
    if (r.ok()) {
      api_ = a;
      return r;
    }
    if (!absent) return r;
    tried += (tried.empty() ? "" : "; ") + r.status().message();
  }
  return Status::Errorf("the server offers no logprob API tern check knows: {}", tried);
}

Result<std::vector<PositionLogprobs>> DeploymentClient::Score(const std::vector<int32_t>& tokens, int64_t first,
                                                               int top_k) {
  if (api_ == LogprobApi::kUnknown) {  // learn the API from a short continuation
    std::vector<int32_t> head(tokens.begin(), tokens.begin() + std::min<size_t>(tokens.size(), 2));
    auto probe = Continue(head, 1, top_k);
    if (!probe.ok()) return probe.status();
  }
  if (api_ == LogprobApi::kLlamaCpp)
    return Status::Error("llama.cpp's /completion does not score prompt tokens, so it cannot be the reference");
  auto r = Request(api_, tokens, 0, top_k, first);
  if (!r.ok()) return r.status();
  std::vector<PositionLogprobs> out;
  for (auto& p : r->positions)
    if (p.position >= first && p.position < int64_t(tokens.size())) out.push_back(std::move(p));
  return out;
}

Result<std::vector<int32_t>> DeploymentClient::Tokenize(const NumericsPrompt& prompt) {
  auto ids_of = [](const json& j) -> std::optional<std::vector<int32_t>> {
    if (!j.is_array() || j.empty()) return std::nullopt;
    std::vector<int32_t> ids;
    for (const json& t : j) {
      if (!t.is_number_integer()) return std::nullopt;
      ids.push_back(t.get<int32_t>());
    }
    return ids;
  };
  std::string tried;
  if (prompt.messages.is_null()) {
    json body = {{"model", server_.model}, {"prompt", prompt.text}, {"content", prompt.text}, {"add_special_tokens", true}};
    for (const char* path : {"/tokenize", "/v1/tokenize"}) {
      auto r = http_.PostJson(path, body.dump());
      if (r.ok() && r->status == 200)
        if (auto j = ParseJsonLenient(r->body))
          if (auto ids = ids_of(JsonField(*j, "tokens"))) return *ids;
      tried += fmt::format("{}{}: {}", tried.empty() ? "" : "; ", path, r.ok() ? ErrorText(*r) : r.status().message());
    }
    return Status::Errorf("could not tokenize the prompt on the reference deployment ({})", tried);
  }
  const json kwargs = {{"enable_thinking", prompt.thinking}, {"thinking", prompt.thinking}};
  json chat = {{"model", server_.model},  {"messages", prompt.messages}, {"max_tokens", 1}, {"temperature", 0},
               {"return_prompt_token_ids", true}, {"chat_template_kwargs", kwargs}};
  auto r = http_.PostJson("/v1/chat/completions", chat.dump());
  if (r.ok() && r->status == 200)
    if (auto j = ParseJsonLenient(r->body)) {
      const json& choices = JsonField(*j, "choices");
      if (choices.is_array() && !choices.empty())
        if (auto ids = ids_of(JsonField(choices[0], "prompt_token_ids"))) return *ids;
    }
  tried = fmt::format("/v1/chat/completions return_prompt_token_ids: {}", r.ok() ? ErrorText(*r) : r.status().message());
  json tok = {{"model", server_.model}, {"messages", prompt.messages}, {"add_generation_prompt", true},
              {"add_special_tokens", false}, {"chat_template_kwargs", kwargs}};
  r = http_.PostJson("/tokenize", tok.dump());
  if (r.ok() && r->status == 200)
    if (auto j = ParseJsonLenient(r->body))
      if (auto ids = ids_of(JsonField(*j, "tokens"))) return *ids;
  tried += fmt::format("; /tokenize with messages: {}", r.ok() ? ErrorText(*r) : r.status().message());
  return Status::Errorf("could not render and tokenize the chat prompt on the reference deployment ({})", tried);
}

}  // namespace tern::check
