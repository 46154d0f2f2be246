// /v1/chat/completions and /v1/completions.
#include <fmt/format.h>

#include "api/chat_output.h"
#include "api/chat_template_inputs.h"
#include "api/error_json.h"
#include "api/requests.h"
#include "api/structured_output.h"
#include "server/generation.h"
#include "server/http_util.h"
#include "server/routes.h"

namespace tern::server {
namespace {
using api::Json;

void ReplyApiError(HttpResponse& res, const api::ApiError& e) {
  res.SetBody(e.status, api::ErrorBody(e), "application/json");
}

// Content type and JSON decoding, with SGLang's errors.
std::optional<Json> DecodeBody(const HttpRequest& req, HttpResponse& res) {
  if (!IsJsonContentType(req)) {
    ReplyApiError(res, api::ApiError::BadRequest(kJsonOnly));
    return std::nullopt;
  }
  auto body = api::ParseJsonBody(req.body);
  if (!body.ok()) {
    ReplyApiError(res, body.error());
    return std::nullopt;
  }
  return std::move(body).value();
}

api::GenerationDefaults ModelDefaults(const ServerContext& ctx) {
  api::GenerationDefaults d;
  d.temperature = ctx.generation.temperature;
  d.top_p = ctx.generation.top_p;
  d.top_k = ctx.generation.top_k;
  d.min_p = ctx.generation.min_p;
  d.repetition_penalty = ctx.generation.repetition_penalty;
  return d;
}

// as_ids: tokens named "token_id:<id>" (vLLM's return_tokens_as_token_ids);
// top: at most this many alternatives (-1: all the engine gave).
std::vector<api::TokenLogprob> ToLogprobs(const ServerContext& ctx, const std::vector<TokenOutput>& toks,
                                          bool as_ids = false, int64_t top = -1) {
  std::vector<api::TokenLogprob> out;
  auto text = [&](int32_t id) { return as_ids ? fmt::format("token_id:{}", id) : TokenText(ctx, id); };
  for (const auto& t : toks) {
    api::TokenLogprob l{.id = t.id, .token = text(t.id), .logprob = t.logprob, .top = {}, .rank = t.rank};
    for (const auto& [id, lp] : t.top) {
      if (top >= 0 && int64_t(l.top.size()) >= top) break;
      l.top.push_back({.id = id, .token = text(id), .logprob = lp});
    }
    out.push_back(std::move(l));
  }
  return out;
}

// A prompt's scored tokens with the unscored first one in front (null logprob).
std::vector<api::TokenLogprob> PromptLogprobs(const ServerContext& ctx, const std::vector<int32_t>& prompt,
                                              const std::vector<TokenOutput>& scored, bool as_ids, int64_t top) {
  std::vector<api::TokenLogprob> out;
  out.push_back({.id = prompt[0], .token = as_ids ? fmt::format("token_id:{}", prompt[0]) : TokenText(ctx, prompt[0]),
                 .null_logprob = true});
  for (auto& l : ToLogprobs(ctx, scored, as_ids, top)) out.push_back(std::move(l));
  return out;
}

// Usage of a request's choices as SGLang adds it up: the prompt once, the
// completions summed; cached tokens (with --enable-cache-report) those of the
// first choice, the one that met the prompt first.
api::Usage SumUsage(const ServerContext& ctx, const std::vector<std::shared_ptr<GenerationRun>>& runs) {
  api::Usage u{.prompt_tokens = runs[0]->prompt_tokens()};
  for (const auto& r : runs) u.completion_tokens += r->completion_tokens();
  if (ctx.opts.enable_cache_report) u.cached_tokens = runs[0]->cached_tokens();
  return u;
}

// A choice that ended in an error (not a client abort) fails the whole non-stream reply.
std::optional<api::ApiError> ChoiceError(const GenerationRun::Step& all) {
  if (all.finish.kind == api::FinishReason::Kind::kAbort && all.finish.status_code)
    return api::ApiError::Http(*all.finish.status_code, all.finish.message);
  return std::nullopt;
}

void HandleChat(ServerContext& ctx, const HttpRequest& http_req, HttpResponse& res) {
  auto body = DecodeBody(http_req, res);
  if (!body) return;
  auto parsed = api::ParseChatRequest(*body, {.context_length = ctx.engine->context_length()});
  if (!parsed.ok()) return ReplyApiError(res, parsed.error());
  api::ChatRequest& req = parsed.value();
  api::ServerParsers parsers{.reasoning = api::ReasoningParserFromName(ctx.opts.reasoning_parser),
                             .tool_call = api::ToolParserFromName(ctx.opts.tool_call_parser),
                             .any_json_whitespace = ctx.opts.json_whitespace == "any"};

  // Prompt tokens: the client's input_ids, or the rendered chat template (plus
  // the forced start of a tool call for tool_choice required / named).
  std::vector<int32_t> prompt;
  std::string rendered;
  api::ForcedToolCall forced;
  if (req.input_ids) {
    prompt = *req.input_ids;
  } else {
    if (!ctx.chat) return ReplyApiError(res, api::ApiError::BadRequest(ctx.chat_error));
    api::ChatTemplateInputs in = api::PrepareChatTemplateInputs(req, api::DetectContentFormat(ctx.chat->source()));
    // continue_final_message as SGLang does it: the final assistant message
    // removed, the generation prompt added (the assistant's turn header), then
    // its text (without the header the continuation followed the user's turn).
    auto text = ctx.chat->Render({.messages = in.messages, .tools = in.tools,
                                  .add_generation_prompt = true, .kwargs = in.kwargs});
    if (!text.ok()) return ReplyApiError(res, api::ApiError::BadRequest(text.status().message()));
    rendered = *text + in.assistant_prefix.value_or("");
    forced = api::ForceToolCall(req, parsers, rendered);
    rendered += forced.prompt_suffix;
    auto ids = ctx.tokenizer->Encode(rendered + forced.reply_prefix, /*add_special_tokens=*/false);
    if (!ids.ok()) return ReplyApiError(res, api::ApiError::BadRequest(ids.status().message()));
    prompt = std::move(*ids);
  }
  auto sampling = api::ResolveSampling(req.sampling, ModelDefaults(ctx), ctx.model->config().vocab_size);
  if (!sampling.ok()) return ReplyApiError(res, sampling.error());
  api::ContextCheck cc = api::CheckContextLength(int64_t(prompt.size()), sampling->max_new_tokens,
                                                 ctx.engine->context_length(), false);
  if (cc.error) return ReplyApiError(res, *cc.error);
  auto constraint = api::ChatConstraint(req, parsers, forced);  // structured output, tool arguments included
  if (!constraint.ok()) return ReplyApiError(res, constraint.error());
  sampling->constraint = *constraint;

  if (req.prompt_logprobs) {
    if (req.stream)
      return ReplyApiError(res, api::ApiError::BadRequest(
                                    "prompt_logprobs are not streamed by tern; send stream: false."));
    if (auto e = api::CheckPromptLogprobBudget(int64_t(prompt.size()) - 1, *req.prompt_logprobs, "prompt_logprobs"))
      return ReplyApiError(res, *e);
  }
  api::ChatParseConfig pcfg = api::MakeChatParseConfig(req, parsers, rendered);
  // A forced tool call is the reply from its first token: never reasoning
  // (deepseek-r1 and qwen3-thinking reason by default, and took the call for it).
  if (!forced.reply_prefix.empty() && pcfg.reasoning) pcfg.reasoning->force_reasoning = false;
  api::ResponseMeta meta{.id = req.rid.value_or(api::NewRequestId("chatcmpl-")), .created = UnixNow(), .model = req.model};
  int32_t engine_top = req.logprobs ? int32_t(req.top_logprobs) : -1;
  if (req.prompt_logprobs) engine_top = std::max(engine_top, int32_t(*req.prompt_logprobs));
  if (auto e = BoundOutputLogprobs(ctx, *sampling, int64_t(prompt.size()), engine_top,
                                   "max_tokens, n or top_logprobs / prompt_logprobs"))
    return ReplyApiError(res, *e);
  RunSpec spec{.id = meta.id, .prompt = prompt, .sampling = *sampling,
               .top_logprobs = engine_top,
               .prompt_logprob_start = req.prompt_logprobs && prompt.size() > 1 ? 1 : -1,
               .keep_special_ids = KeptParserTagIds(*ctx.tokenizer, api::ChatParserTags(pcfg))};
  // The grammar starts after the reasoning, unless a tool call is forced: its
  // prompt closed any reasoning already, so no </think> would ever come and
  // the call went unconstrained.
  if (sampling->constraint && forced.reply_prefix.empty() && api::ConstraintAfterReasoning(pcfg, req))
    if (auto ids = ctx.tokenizer->Encode("</think>", false); ids.ok()) spec.grammar_after = *ids;
  RecordGeneration(*res.record, ctx, spec, rendered);
  auto started = GenerationRun::StartGroup(ctx, std::move(spec));
  if (!started.ok()) return ReplyApiError(res, started.error());
  std::vector<std::shared_ptr<GenerationRun>> runs = std::move(started).value();

  if (!req.stream) {
    std::vector<api::ChatChoice> choices;
    std::vector<TokenOutput> scored;  // the first choice's prompt logprobs
    int64_t reasoning_tokens = 0;
    for (auto& run : runs) {
      GenerationRun::Step all = run->RunToEnd(http_req.connected);
      res.record->AppendCompletion(all.text);
      RecordCompletion(*res.record, runs);
      if (auto e = ChoiceError(all)) return ReplyApiError(res, *e);
      if (choices.empty()) scored = std::move(all.prompt_logprobs);
      api::ChatChoice choice = api::ParseChatOutput(pcfg, forced.reply_prefix + all.text, all.finish);
      if (req.logprobs) choice.logprobs = ToLogprobs(ctx, all.tokens, false, req.top_logprobs);
      if (req.return_prompt_token_ids) choice.prompt_token_ids = prompt;
      api::ReasoningTokenCounter counter(pcfg, forced.reply_prefix);
      for (const auto& t : all.tokens) counter.Add(TokenText(ctx, t.id));
      reasoning_tokens += counter.count();
      choices.push_back(std::move(choice));
    }
    api::Usage usage = SumUsage(ctx, runs);
    usage.reasoning_tokens = reasoning_tokens;
    std::optional<std::vector<api::TokenLogprob>> prompt_lps;
    if (req.prompt_logprobs) prompt_lps = PromptLogprobs(ctx, prompt, scored, false, *req.prompt_logprobs);
    res.SetBody(200, api::ToJsonText(api::ChatCompletionJson(meta, choices, usage, prompt_lps ? &*prompt_lps : nullptr)),
                "application/json");
    return;
  }

  // One output parser per choice; the encoder keeps each choice's tool-call state.
  struct State {
    explicit State(const api::ResponseMeta& meta) : enc(meta) {}
    api::ChatStreamEncoder enc;
    std::vector<api::ChatOutputParser> parsers;
    std::vector<api::ReasoningTokenCounter> reasoning_tokens;
    // Per choice, tokens whose text is not out yet (held back by a stop string
    // or a parser, or become tool calls): their logprobs go with the next text.
    std::vector<std::vector<TokenOutput>> unsent_logprobs;
  };
  auto st = std::make_shared<State>(meta);
  for (size_t i = 0; i < runs.size(); ++i) {
    st->parsers.emplace_back(pcfg);
    st->reasoning_tokens.emplace_back(pcfg, forced.reply_prefix);
  }
  st->unsent_logprobs.resize(runs.size());
  const bool include_usage = req.include_usage, continuous = req.continuous_usage_stats, logprobs = req.logprobs;
  const int64_t top_logprobs = req.top_logprobs;
  ServerContext* c = &ctx;
  StreamRuns(
      res, runs,
      [st, runs, continuous, logprobs, top_logprobs, c](int i, const GenerationRun::Step& step, ChunkSink& sink) {
        std::string out;
        api::ChatOutputParser& parser = st->parsers[size_t(i)];
        api::ReasoningTokenCounter& counter = st->reasoning_tokens[size_t(i)];
        for (const auto& t : step.tokens) counter.Add(TokenText(*c, t.id));
        const GenerationRun& run = *runs[size_t(i)];
        api::Usage usage{.prompt_tokens = run.prompt_tokens(), .completion_tokens = run.completion_tokens(),
                         .reasoning_tokens = counter.count()};
        api::ChatDelta d = parser.Push(step.text);
        if (step.finished) {
          api::ChatDelta tail = parser.Finish();
          d.reasoning += tail.reasoning;
          d.content += tail.content;
          for (auto& t : tail.tool_calls) d.tool_calls.push_back(std::move(t));
        }
        if (logprobs) {
          // Every token's logprobs, as the whole reply has them: with the
          // first text out after it, or at the end in a delta of its own.
          std::vector<TokenOutput>& unsent = st->unsent_logprobs[size_t(i)];
          unsent.insert(unsent.end(), step.tokens.begin(), step.tokens.end());
          if (!unsent.empty() && (!d.reasoning.empty() || !d.content.empty() || step.finished)) {
            Json lp = api::ChatLogprobsJson(ToLogprobs(*c, unsent, false, top_logprobs));
            unsent.clear();
            if (!d.reasoning.empty()) out += st->enc.Reasoning(i, d.reasoning, continuous ? &usage : nullptr, &lp), d.reasoning.clear();
            else out += st->enc.Content(i, d.content, continuous ? &usage : nullptr, &lp), d.content.clear();
          }
        }
        out += api::EncodeChatDelta(st->enc, i, d, continuous ? &usage : nullptr);
        if (step.finished) {
          if (step.finish.kind == api::FinishReason::Kind::kAbort && step.finish.status_code) {
            out += SseEvent(api::ErrorBody(api::ApiError::Http(*step.finish.status_code, step.finish.message)));
          } else {
            out += st->enc.Finish(i, step.finish);
          }
        }
        if (!out.empty()) sink.Write(out);
      },
      [st, reply_prefix = forced.reply_prefix](ChunkSink& sink) {
        std::string out;
        for (size_t i = 0; i < st->parsers.size(); ++i) out += st->enc.Role(int(i));
        // The forced start of a tool call is part of every choice's reply.
        if (!reply_prefix.empty())
          for (size_t i = 0; i < st->parsers.size(); ++i)
            out += api::EncodeChatDelta(st->enc, int(i), st->parsers[i].Push(reply_prefix));
        sink.Write(out);
      },
      [st, runs, include_usage, c](ChunkSink& sink) {
        if (!include_usage) return;
        api::Usage usage = SumUsage(*c, runs);
        for (const auto& r : st->reasoning_tokens) usage.reasoning_tokens += r.count();
        const std::string out = st->enc.UsageChunk(usage);
        sink.Write(out);
      });
}

void HandleCompletion(ServerContext& ctx, const HttpRequest& http_req, HttpResponse& res) {
  auto body = DecodeBody(http_req, res);
  if (!body) return;
  auto parsed = api::ParseCompletionRequest(*body);
  if (!parsed.ok()) return ReplyApiError(res, parsed.error());
  api::CompletionRequest& req = parsed.value();
  if (req.prompts.size() != 1)
    return ReplyApiError(res, api::ApiError::BadRequest("batched prompts are not supported by tern yet"));
  const api::PromptInput& p = req.prompts[0];
  std::vector<int32_t> prompt = p.token_ids;
  std::string prompt_text;
  if (p.text) {
    auto ids = ctx.tokenizer->Encode(*p.text, /*add_special_tokens=*/true);
    if (!ids.ok()) return ReplyApiError(res, api::ApiError::BadRequest(ids.status().message()));
    prompt = std::move(*ids);
    prompt_text = *p.text;
  } else if (req.echo) {
    auto t = ctx.tokenizer->Decode(prompt, false);
    if (t.ok()) prompt_text = *t;
  }
  auto sampling = api::ResolveSampling(req.sampling, {}, ctx.model->config().vocab_size);
  if (!sampling.ok()) return ReplyApiError(res, sampling.error());
  api::ContextCheck cc = api::CheckContextLength(int64_t(prompt.size()), sampling->max_new_tokens,
                                                 ctx.engine->context_length(), false);
  if (cc.error) return ReplyApiError(res, *cc.error);
  // Prompt logprobs: echo with logprobs (OpenAI's legacy form) and vLLM's prompt_logprobs.
  const bool echo_logprobs = req.echo && req.logprobs.has_value();
  const bool prompt_lps = echo_logprobs || req.prompt_logprobs.has_value();
  const int64_t prompt_top = std::max(echo_logprobs ? *req.logprobs : 0, req.prompt_logprobs.value_or(0));
  if (prompt_lps && req.stream)
    return ReplyApiError(res, api::ApiError::BadRequest(
                                  "Prompt logprobs (echo with logprobs, prompt_logprobs) are not streamed by tern; "
                                  "send stream: false."));
  if (prompt_lps)
    if (auto e = api::CheckPromptLogprobBudget(int64_t(prompt.size()) - 1, prompt_top, "logprobs / prompt_logprobs"))
      return ReplyApiError(res, *e);
  api::ResponseMeta meta{.id = req.rid.value_or(api::NewRequestId("cmpl-")), .created = UnixNow(), .model = req.model};
  int32_t engine_top = req.logprobs ? int32_t(*req.logprobs) : -1;
  if (prompt_lps) engine_top = int32_t(std::max<int64_t>(engine_top, prompt_top));
  if (auto e = BoundOutputLogprobs(ctx, *sampling, int64_t(prompt.size()), engine_top,
                                   "max_tokens, n or logprobs / prompt_logprobs"))
    return ReplyApiError(res, *e);
  RunSpec spec{.id = meta.id, .prompt = prompt, .sampling = *sampling, .top_logprobs = engine_top,
               .prompt_logprob_start = prompt_lps && prompt.size() > 1 ? 1 : -1};
  const bool as_ids = req.return_tokens_as_token_ids;
  const int64_t out_top = req.logprobs.value_or(-1);
  RecordGeneration(*res.record, ctx, spec, prompt_text);
  auto started = GenerationRun::StartGroup(ctx, std::move(spec));
  if (!started.ok()) return ReplyApiError(res, started.error());
  std::vector<std::shared_ptr<GenerationRun>> runs = std::move(started).value();
  const bool echo = req.echo;

  if (!req.stream) {
    std::vector<api::CompletionChoice> choices;
    std::vector<TokenOutput> scored;  // the first choice's prompt logprobs, shared by all
    for (auto& run : runs) {
      GenerationRun::Step all = run->RunToEnd(http_req.connected);
      res.record->AppendCompletion(all.text);
      RecordCompletion(*res.record, runs);
      if (auto e = ChoiceError(all)) return ReplyApiError(res, *e);
      if (choices.empty()) scored = std::move(all.prompt_logprobs);
      api::CompletionChoice choice{.text = (echo ? prompt_text : "") + all.text, .finish = all.finish};
      if (req.logprobs) {
        std::vector<api::TokenLogprob> lps;
        if (echo_logprobs) lps = PromptLogprobs(ctx, prompt, scored, as_ids, out_top);
        for (auto& l : ToLogprobs(ctx, all.tokens, as_ids, out_top)) lps.push_back(std::move(l));
        choice.logprobs = std::move(lps);
      }
      if (req.prompt_logprobs)
        choice.prompt_logprobs = PromptLogprobs(ctx, prompt, scored, as_ids, *req.prompt_logprobs);
      choices.push_back(std::move(choice));
    }
    res.SetBody(200, api::ToJsonText(api::CompletionJson(meta, choices, SumUsage(ctx, runs))), "application/json");
    return;
  }
  auto enc = std::make_shared<api::CompletionStreamEncoder>(meta);
  const bool include_usage = req.include_usage, logprobs = req.logprobs.has_value();
  const int n = int(runs.size());
  ServerContext* c = &ctx;
  StreamRuns(
      res, runs,
      [enc, logprobs, c, as_ids](int i, const GenerationRun::Step& step, ChunkSink& sink) {
        std::string out;
        std::vector<api::TokenLogprob> lps;
        if (logprobs) lps = ToLogprobs(*c, step.tokens, as_ids);
        if (!step.text.empty() || (logprobs && !lps.empty())) out += enc->Chunk(i, step.text, nullptr, logprobs ? &lps : nullptr);
        if (step.finished) {
          if (step.finish.kind == api::FinishReason::Kind::kAbort && step.finish.status_code)
            out += SseEvent(api::ErrorBody(api::ApiError::Http(*step.finish.status_code, step.finish.message)));
          else
            out += enc->Chunk(i, "", &step.finish);
        }
        if (!out.empty()) sink.Write(out);
      },
      [enc, echo, prompt_text, n](ChunkSink& sink) {
        if (!echo || prompt_text.empty()) return;
        std::string out;
        for (int i = 0; i < n; ++i) out += enc->Chunk(i, prompt_text);
        sink.Write(out);
      },
      [enc, runs, include_usage, c](ChunkSink& sink) {
        if (!include_usage) return;
        const std::string out = enc->UsageChunk(SumUsage(*c, runs));
        sink.Write(out);
      });
}

}  // namespace

void AddOpenAiRoutes(HttpRoutes& routes, ServerContext& ctx) {
  routes.Post("/v1/chat/completions", [&ctx](const HttpRequest& req, HttpResponse& res) { HandleChat(ctx, req, res); });
  routes.Post("/invocations", [&ctx](const HttpRequest& req, HttpResponse& res) { HandleChat(ctx, req, res); });
  routes.Post("/v1/completions", [&ctx](const HttpRequest& req, HttpResponse& res) { HandleCompletion(ctx, req, res); });
}

}  // namespace tern::server
