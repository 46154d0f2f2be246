// Native SGLang endpoints: /generate, /v1/tokenize, /v1/detokenize, /abort_request.
#include <fmt/format.h>

#include "api/error_json.h"
#include "api/requests.h"
#include "server/generation.h"
#include "server/http_util.h"
#include "server/routes.h"

namespace tern::server {
namespace {
constexpr size_t kMaxDetokenizedBytes = size_t(64) << 20;
}  // namespace
namespace {
using api::Json;

void ReplyGenerateError(HttpResponse& res, const api::ApiError& e) {
  res.SetBody(e.status, api::GenerateErrorBody(e), "application/json");
}

void ReplyApiError(HttpResponse& res, const api::ApiError& e) {
  res.SetBody(e.status, api::ErrorBody(e), "application/json");
}

void HandleGenerate(ServerContext& ctx, const HttpRequest& http_req, HttpResponse& res) {
  if (!IsJsonContentType(http_req)) return ReplyGenerateError(res, api::ApiError::BadRequest(kJsonOnly));
  auto body = api::ParseJsonBody(http_req.body);
  if (!body.ok()) return ReplyGenerateError(res, body.error());
  auto parsed = api::ParseGenerateRequest(*body);
  if (!parsed.ok()) return ReplyGenerateError(res, parsed.error());
  api::GenerateRequest& req = parsed.value();
  if (req.prompts.size() != 1)
    return ReplyGenerateError(res, api::ApiError::BadRequest("batched prompts are not supported by tern yet"));
  std::vector<int32_t> prompt = req.prompts[0].token_ids;
  if (req.prompts[0].text) {
    auto ids = ctx.tokenizer->Encode(*req.prompts[0].text, true);
    if (!ids.ok()) return ReplyGenerateError(res, api::ApiError::BadRequest(ids.status().message()));
    prompt = std::move(*ids);
  }
  auto sampling = api::ResolveSampling(req.sampling, {}, ctx.model->config().vocab_size);
  if (!sampling.ok()) return ReplyGenerateError(res, sampling.error());
  api::ContextCheck cc = api::CheckContextLength(int64_t(prompt.size()), sampling->max_new_tokens,
                                                 ctx.engine->context_length(), false);
  if (cc.error) return ReplyGenerateError(res, *cc.error);
  // input_token_logprobs cover prompt[start:], the first entry without a
  // logprob (SGLang's layout); the engine scores prompt[start + 1:].
  const int64_t n_prompt = int64_t(prompt.size());
  int64_t start = -1;
  if (req.return_logprob) {
    start = req.logprob_start_len;
    if (start >= n_prompt)
      return ReplyGenerateError(
          res, api::ApiError::BadRequest(fmt::format("req.logprob_start_len={} is higher than the number of input "
                                                     "tokens len(req.origin_input_ids)={}. Please use a smaller "
                                                     "logprob_start_len.",
                                                     start, n_prompt)));
    if (start < 0) start = n_prompt - 1;
    if (auto e = api::CheckPromptLogprobBudget(n_prompt - start, req.top_logprobs_num,
                                               "top_logprobs_num or raise logprob_start_len"))
      return ReplyGenerateError(res, *e);
    if (auto e = BoundOutputLogprobs(ctx, *sampling, n_prompt, req.top_logprobs_num,
                                     "max_new_tokens, n or top_logprobs_num"))
      return ReplyGenerateError(res, *e);
  }
  const std::string id = req.rid.value_or(api::NewRequestId(""));
  RunSpec spec{.id = id, .prompt = prompt, .sampling = *sampling,
               .top_logprobs = req.return_logprob ? int32_t(req.top_logprobs_num) : -1,
               .prompt_logprob_start = start >= 0 && start + 1 < n_prompt ? start + 1 : -1};
  RecordGeneration(*res.record, ctx, spec, req.prompts[0].text.value_or(""));
  auto started = GenerationRun::StartGroup(ctx, std::move(spec));
  if (!started.ok()) return ReplyGenerateError(res, started.error());
  std::vector<std::shared_ptr<GenerationRun>> runs = std::move(started).value();
  const bool several = runs.size() > 1;
  // A list of outputs (and streamed chunks with their index) for n > 1 or a
  // batch, also of one prompt (["hi"], [[1, 2]]), as SGLang answers a batch.
  const bool as_list = several || req.batch;
  // SGLang gives each of n > 1 choices a fresh request id.
  std::vector<std::string> ids;
  for (size_t i = 0; i < runs.size(); ++i) ids.push_back(several ? api::NewRequestId("") : id);

  // Every choice reports the prompt's logprobs; the first choice computed them.
  auto prompt_lps = std::make_shared<std::vector<TokenOutput>>();
  ServerContext* c = &ctx;
  auto make_output = [runs, ids, several, return_logprob = req.return_logprob, top_n = req.top_logprobs_num,
                      text_in = req.return_text_in_logprobs, c, prompt, start,
                      prompt_lps](int i, const std::string& text, const std::vector<TokenOutput>& toks,
                                  const std::optional<api::FinishReason>& fin) {
    const GenerationRun& run = *runs[size_t(i)];
    api::GenerateOutput out{.id = ids[size_t(i)], .text = text, .output_ids = run.output_ids(), .finish = fin,
                            .prompt_tokens = run.prompt_tokens(), .completion_tokens = run.completion_tokens(),
                            .cached_tokens = run.cached_tokens()};
    if (fin) out.e2e_latency = run.elapsed_seconds();
    if (return_logprob) {
      auto text_of = [&](int32_t id) { return text_in ? TokenText(*c, id) : std::string(); };
      auto convert = [&](const TokenOutput& t) {
        api::TokenLogprob l{.id = t.id, .token = text_of(t.id), .logprob = t.logprob, .top = {}};
        for (const auto& [tid, lp] : t.top) l.top.push_back({.id = tid, .token = text_of(tid), .logprob = lp});
        return l;
      };
      std::vector<api::TokenLogprob> lps;
      for (const auto& t : toks) lps.push_back(convert(t));
      out.logprobs = std::move(lps);
      out.text_in_logprobs = text_in;
      out.top_logprobs_num = top_n;
      if (fin) {  // streams: with the last chunk
        std::vector<api::TokenLogprob> in;
        in.push_back({.id = prompt[size_t(start)], .token = text_of(prompt[size_t(start)]), .null_logprob = true});
        for (const auto& t : *prompt_lps) in.push_back(convert(t));
        out.input_logprobs = std::move(in);
      }
    }
    return out;
  };

  if (!req.stream) {
    Json outputs = Json::array();
    for (size_t i = 0; i < runs.size(); ++i) {
      GenerationRun::Step all = runs[i]->RunToEnd(http_req.connected);
      res.record->AppendCompletion(all.text);
      RecordCompletion(*res.record, runs);
      if (all.finish.kind == api::FinishReason::Kind::kAbort && all.finish.status_code)
        return ReplyGenerateError(res, api::ApiError::Http(*all.finish.status_code, all.finish.message));
      if (i == 0) *prompt_lps = std::move(all.prompt_logprobs);
      outputs.push_back(api::GenerateJson(make_output(int(i), all.text, all.tokens, all.finish)));
    }
    res.SetBody(200, api::ToJsonText(as_list ? outputs : outputs[0]), "application/json");
    return;
  }
  // SGLang streams the whole text so far in every chunk.
  struct State {
    std::vector<std::string> text;
    std::vector<std::vector<TokenOutput>> tokens;
  };
  auto st = std::make_shared<State>();
  st->text.resize(runs.size());
  st->tokens.resize(runs.size());
  StreamRuns(
      res, runs,
      [st, make_output, as_list, prompt_lps](int i, const GenerationRun::Step& step, ChunkSink& sink) {
        for (const auto& t : step.prompt_logprobs) prompt_lps->push_back(t);
        st->text[size_t(i)] += step.text;
        for (auto& t : step.tokens) st->tokens[size_t(i)].push_back(t);
        std::string out;
        if (step.finished && step.finish.kind == api::FinishReason::Kind::kAbort && step.finish.status_code) {
          out = SseEvent(api::GenerateErrorBody(api::ApiError::Http(*step.finish.status_code, step.finish.message)));
        } else if (!step.tokens.empty() || step.finished) {
          api::GenerateOutput o = make_output(i, st->text[size_t(i)], st->tokens[size_t(i)],
                                              step.finished ? std::optional(step.finish) : std::nullopt);
          if (as_list) o.index = i;
          out = "data: " + api::ToJsonText(api::GenerateJson(o)) + "\n\n";
        }
        if (!out.empty()) sink.Write(out);
      },
      [](ChunkSink&) {}, [](ChunkSink&) {});
}

}  // namespace

void AddGenerateRoutes(HttpRoutes& routes, ServerContext& ctx) {
  auto gen = [&ctx](const HttpRequest& req, HttpResponse& res) { HandleGenerate(ctx, req, res); };
  routes.Post("/generate", gen);
  routes.Put("/generate", gen);
  routes.Post("/abort_request", [&ctx](const HttpRequest& http_req, HttpResponse& res) {
    if (!IsJsonContentType(http_req)) return ReplyGenerateError(res, api::ApiError::BadRequest(kJsonOnly));
    auto body = api::ParseJsonBody(http_req.body);
    if (!body.ok()) return ReplyGenerateError(res, body.error());
    auto req = api::ParseAbortRequest(*body);
    if (!req.ok()) return ReplyGenerateError(res, req.error());
    std::lock_guard lock(ctx.streams_mu);
    for (auto& [id, weak] : ctx.streams)
      if (req->abort_all || (!req->rid.empty() && id == req->rid))
        if (auto s = weak.lock()) s->Abort();
    res.status = 200;
  });
}

void AddTokenizeRoutes(HttpRoutes& routes, ServerContext& ctx) {
  auto tokenize = [&ctx](const HttpRequest& http_req, HttpResponse& res) {
    if (!IsJsonContentType(http_req)) return ReplyApiError(res, api::ApiError::BadRequest(kJsonOnly));
    auto body = api::ParseJsonBody(http_req.body);
    if (!body.ok()) return ReplyApiError(res, body.error());
    auto req = api::ParseTokenizeRequest(*body);
    if (!req.ok()) return ReplyApiError(res, req.error());
    auto ids = ctx.tokenizer->Encode(req->prompt, req->add_special_tokens);
    if (!ids.ok()) return ReplyFlatError(res, 400, ids.status().message());
    ReplyJson(res, 200, {{"tokens", *ids}, {"count", ids->size()}, {"max_model_len", ctx.engine->context_length()}});
  };
  routes.Post("/v1/tokenize", tokenize);
  routes.Post("/tokenize", tokenize);
  auto detokenize = [&ctx](const HttpRequest& http_req, HttpResponse& res) {
    if (!IsJsonContentType(http_req)) return ReplyApiError(res, api::ApiError::BadRequest(kJsonOnly));
    auto body = api::ParseJsonBody(http_req.body);
    if (!body.ok()) return ReplyApiError(res, body.error());
    auto req = api::ParseDetokenizeRequest(*body, ctx.tokenizer->vocab_size());
    if (!req.ok()) return ReplyApiError(res, req.error());
    // Each id may stand for many bytes (16M ids of a 256-byte token in a 32 MiB
    // body: 4 GB of text, copied several times on the way out): bounded by the
    // tokens' own lengths first, which are at least their decoded bytes' count.
    size_t bytes = 0;
    for (int32_t id : req->tokens) bytes += ctx.tokenizer->IdToToken(id).size();
    if (bytes > kMaxDetokenizedBytes)
      return ReplyApiError(res, api::ApiError::BadRequest(fmt::format(
                                    "The {} tokens would decode to up to {} bytes; at most {} are returned at once.",
                                    req->tokens.size(), bytes, kMaxDetokenizedBytes)));
    auto text = ctx.tokenizer->Decode(req->tokens, req->skip_special_tokens);
    if (!text.ok()) return ReplyFlatError(res, 400, text.status().message());
    ReplyJson(res, 200, {{"text", *text}});
  };
  routes.Post("/v1/detokenize", detokenize);
  routes.Post("/detokenize", detokenize);
}

}  // namespace tern::server
