#include "server/generation.h"

#include <algorithm>

#include "grammar/compiler.h"
#include "server/http_util.h"
#include "server/request_log.h"

namespace tern::server {

SamplingParams ToEngineSampling(const api::SamplingParams& s) {
  SamplingParams e;
  e.temperature = s.greedy() ? 0.0 : s.temperature;
  e.top_k = s.top_k < 0 ? 0 : s.top_k;
  e.top_p = s.top_p;
  e.min_p = s.min_p;
  e.repetition_penalty = s.repetition_penalty;
  e.presence_penalty = s.presence_penalty;
  e.frequency_penalty = s.frequency_penalty;
  if (s.seed) e.seed = uint64_t(*s.seed);
  e.logit_bias = s.logit_bias;
  e.min_new_tokens = s.min_new_tokens;  // the engine suppresses the request's stop tokens until reached
  return e;
}

std::optional<api::ApiError> BoundOutputLogprobs(const ServerContext& ctx, api::SamplingParams& sampling,
                                                 int64_t prompt_tokens, int64_t top, std::string_view what) {
  if (top < 0) return std::nullopt;
  const int64_t room = std::max<int64_t>(0, ctx.engine->max_sequence_tokens() - prompt_tokens);
  if (sampling.max_new_tokens)
    return api::CheckOutputLogprobBudget(sampling.n, std::min(*sampling.max_new_tokens, room), top, what);
  // n <= 128 and top <= 1000: at least 65 tokens.
  sampling.max_new_tokens = std::min(room, api::kMaxOutputLogprobEntries / (std::max<int64_t>(sampling.n, 1) * (1 + top)));
  return std::nullopt;
}

std::string TokenText(const ServerContext& ctx, int32_t id) {
  auto t = ctx.tokenizer->Decode(std::span<const int32_t>(&id, 1), false);
  return t.ok() ? *t : std::string();
}

void RecordGeneration(RequestRecord& record, const ServerContext& ctx, const RunSpec& spec,
                      std::string_view prompt_text) {
  // The id goes back as the X-Request-Id header: a client's rid that is no
  // usable header value (control characters, over 128 bytes) is logged as the
  // response's id instead, and the response gets a fresh header id.
  if (record.request_id.empty()) record.request_id = UsableRequestId(spec.id);
  if (record.request_id != spec.id) record.response_id = spec.id;
  record.prompt_tokens = int64_t(spec.prompt.size());
  record.completion_tokens = 0;
  if (LogsSampling(ctx.request_log)) {
    const api::SamplingParams& s = spec.sampling;
    nlohmann::json j = {{"temperature", s.temperature}, {"top_p", s.top_p}, {"top_k", s.top_k}, {"min_p", s.min_p},
                        {"n", s.n}};
    if (s.max_new_tokens) j["max_new_tokens"] = *s.max_new_tokens;
    if (s.seed) j["seed"] = *s.seed;
    if (s.repetition_penalty != 1.0) j["repetition_penalty"] = s.repetition_penalty;
    if (s.presence_penalty != 0.0) j["presence_penalty"] = s.presence_penalty;
    if (s.frequency_penalty != 0.0) j["frequency_penalty"] = s.frequency_penalty;
    record.sampling_json = j.dump();
  }
  record.text_chars = LoggedTextChars(ctx.request_log);
  if (record.text_chars > 0) record.prompt_text = std::string(prompt_text.substr(0, record.text_chars));
}

void RecordCompletion(RequestRecord& record, const std::vector<std::shared_ptr<GenerationRun>>& runs) {
  int64_t n = 0;
  for (const auto& r : runs) n += r->completion_tokens();
  record.completion_tokens = n;
}

std::vector<int32_t> KeptParserTagIds(const Tokenizer& tokenizer, const std::vector<std::string>& tags) {
  std::vector<int32_t> ids;
  for (const std::string& tag : tags)
    if (auto id = tokenizer.TokenToId(tag); id && tokenizer.IsSpecial(*id)) ids.push_back(*id);
  return ids;
}

GenerationRun::GenerationRun(ServerContext& ctx, RunSpec spec, std::vector<int32_t> stop_ids,
                             std::shared_ptr<RequestStream> stream)
    : ctx_(ctx),
      spec_(std::move(spec)),
      stop_ids_(std::move(stop_ids)),
      stream_(std::move(stream)),
      // JoinsText decides which special tokens are decoded.
      decoder_(*ctx.tokenizer, /*skip_special_tokens=*/false),
      stops_(spec_.sampling.stop),
      start_(std::chrono::steady_clock::now()) {}

GenerationRun::~GenerationRun() {
  if (!done_) stream_->Abort();
  ctx_.Untrack(spec_.id, stream_);
}

namespace {
// The request's constraint compiled (cached) for the served tokenizer; a 400 naming what is wrong.
api::ApiResult<std::shared_ptr<const grammar::CompiledGrammar>> CompileConstraint(ServerContext& ctx,
                                                                                  const api::ConstraintRequest& c) {
  std::call_once(ctx.grammars_once, [&] {
    ctx.grammars = std::make_shared<grammar::GrammarCompiler>(
        grammar::TokenVocabulary::FromTokenizer(*ctx.tokenizer, int32_t(ctx.model->config().vocab_size)));
  });
  grammar::ConstraintSpec spec{.text = c.text};
  spec.json.whitespace = ctx.opts.json_whitespace == "any"      ? grammar::JsonSchemaOptions::Whitespace::kAny
                         : ctx.opts.json_whitespace == "spaced" ? grammar::JsonSchemaOptions::Whitespace::kSpaced
                                                                : grammar::JsonSchemaOptions::Whitespace::kCompact;
  spec.kind = c.kind == api::ConstraintRequest::Kind::kRegex  ? grammar::ConstraintKind::kRegex
              : c.kind == api::ConstraintRequest::Kind::kEbnf ? grammar::ConstraintKind::kEbnf
                                                              : grammar::ConstraintKind::kJsonSchema;
  auto g = ctx.grammars->Compile(spec);
  if (!g.ok()) return api::ApiError::BadRequest(g.status().message());
  return *g;
}
}  // namespace

api::ApiResult<std::vector<std::shared_ptr<GenerationRun>>> GenerationRun::StartGroup(ServerContext& ctx,
                                                                                       RunSpec spec) {
  const int64_t n = std::max<int64_t>(spec.sampling.n, 1);
  std::shared_ptr<const grammar::CompiledGrammar> compiled;
  if (spec.sampling.constraint) {
    auto g = CompileConstraint(ctx, *spec.sampling.constraint);
    if (!g.ok()) return g.error();
    compiled = *g;
  }
  std::vector<EngineRequest> reqs;
  std::vector<int32_t> stop_ids;
  for (int64_t i = 0; i < n; ++i) {
    EngineRequest req;
    req.id = spec.id;
    req.prompt = spec.prompt;
    req.sampling = ToEngineSampling(spec.sampling);
    if (req.sampling.seed) req.sampling.seed = *req.sampling.seed + uint64_t(i);
    req.max_tokens = spec.sampling.max_new_tokens.value_or(ctx.engine->context_length());
    req.top_logprobs = spec.top_logprobs;
    req.prompt_logprob_start = spec.prompt_logprob_start;
    // The token stops: the request's stop_token_ids and the model's EOS ids.
    // ignore_eos turns them all off, stop_token_ids too, as SGLang's
    // check_finished does; min_new_tokens holds them all back either way
    // (SGLang's min-new-tokens penalizer blocks stop ids and EOS alike).
    std::vector<int32_t> token_stops = spec.sampling.stop_token_ids;
    for (int32_t id : ctx.eos_token_ids)
      if (std::find(token_stops.begin(), token_stops.end(), id) == token_stops.end()) token_stops.push_back(id);
    if (req.sampling.min_new_tokens > 0) req.sampling.min_tokens_suppressed = token_stops;
    if (!spec.sampling.ignore_eos) req.stop_token_ids = std::move(token_stops);
    if (req.max_tokens <= 0) req.max_tokens = 0;
    req.grammar = compiled;
    req.grammar_after = spec.grammar_after;
    stop_ids = req.stop_token_ids;
    reqs.push_back(std::move(req));
  }
  SubmitGroupResult sub = ctx.engine->SubmitGroup(std::move(reqs));
  if (sub.streams.empty()) {
    const int status = HttpStatusFor(sub.error_kind);
    return status == 400 ? api::ApiError::BadRequest(sub.error) : api::ApiError::Http(status, sub.error);
  }
  std::vector<std::shared_ptr<GenerationRun>> runs;
  for (auto& stream : sub.streams) {
    ctx.Track(spec.id, stream);
    runs.push_back(std::shared_ptr<GenerationRun>(new GenerationRun(ctx, spec, stop_ids, std::move(stream))));
  }
  return runs;
}

void GenerationRun::Abort() { stream_->Abort(); }

bool GenerationRun::JoinsText(int32_t id) const {
  // The engine stops at the first stop id it samples (none before
  // min_new_tokens), so a stop id in the output is the one that ended it.
  if (!spec_.sampling.no_stop_trim && std::find(stop_ids_.begin(), stop_ids_.end(), id) != stop_ids_.end())
    return false;
  if (!spec_.sampling.skip_special_tokens || !ctx_.tokenizer->IsSpecial(id)) return true;
  return std::find(spec_.keep_special_ids.begin(), spec_.keep_special_ids.end(), id) != spec_.keep_special_ids.end();
}

double GenerationRun::elapsed_seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

bool GenerationRun::Next(Step& out, std::chrono::milliseconds timeout) {
  out = Step{};
  if (done_) {
    out.finished = true;
    return true;
  }
  RequestUpdate u;
  if (!stream_->Next(u, timeout)) return false;
  out.prompt_logprobs = std::move(u.prompt_logprobs);
  for (TokenOutput& t : u.tokens) {
    if (stops_.stopped()) break;
    output_ids_.push_back(t.id);
    ++completion_tokens_;
    const bool hit = JoinsText(t.id) && stops_.Append(decoder_.Push(t.id));
    out.tokens.push_back(std::move(t));
    if (hit) {
      stream_->Abort();  // the engine frees the sequence at its next step
      break;
    }
  }
  if (stops_.stopped()) {
    out.text = stops_.TakeRest();
    out.finished = true;
    out.finish = api::FinishReason::StopString(stops_.matched());
    done_ = true;
    return true;
  }
  if (u.finished) {
    cached_tokens_ = u.cached_tokens;
    stops_.Append(decoder_.Flush());
    out.text = stops_.TakeRest();
    out.finished = true;
    done_ = true;
    switch (u.reason) {
      case FinishReason::kStop: out.finish = api::FinishReason::StopToken(u.matched_stop_token); break;
      case FinishReason::kLength:
        // The tokens the engine let the reply have (its max_new_tokens, or less
        // where the context or the KV pool ended it), as SGLang reports its clamped value.
        out.finish = api::FinishReason::Length(u.completion_tokens);
        break;
      default:
        out.finish = api::FinishReason::Abort(
            u.message.empty() ? "The request was aborted." : u.message,
            u.error == EngineError::kNone ? std::nullopt : std::optional<int>(HttpStatusFor(u.error)));
    }
    return true;
  }
  out.text = stops_.TakeReady();
  return true;
}

GenerationRun::Step GenerationRun::RunToEnd(const std::function<bool()>& keep_going) {
  Step all, s;
  auto next_check = std::chrono::steady_clock::now();
  while (!all.finished) {
    if (keep_going && std::chrono::steady_clock::now() >= next_check) {
      next_check = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
      if (!keep_going()) {
        Abort();
        all.finished = true;
        all.finish = api::FinishReason::Abort("The client disconnected.", std::nullopt);
        return all;
      }
    }
    if (!Next(s, std::chrono::milliseconds(100))) continue;
    all.text += s.text;
    for (auto& t : s.prompt_logprobs) all.prompt_logprobs.push_back(std::move(t));
    for (auto& t : s.tokens) all.tokens.push_back(std::move(t));
    if (s.finished) {
      all.finished = true;
      all.finish = s.finish;
    }
  }
  return all;
}

void StreamRuns(HttpResponse& res, std::vector<std::shared_ptr<GenerationRun>> runs, StepWriter on_step,
                SinkWriter on_start, SinkWriter on_end) {
  struct State {
    std::vector<std::shared_ptr<GenerationRun>> runs;
    std::vector<bool> finished;
    size_t left = 0;
    bool started = false;
  };
  auto st = std::make_shared<State>();
  st->runs = std::move(runs);
  st->finished.assign(st->runs.size(), false);
  st->left = st->runs.size();
  auto abort_all = [st] {
    for (auto& r : st->runs) r->Abort();
  };
  std::shared_ptr<RequestRecord> record = res.record;
  res.headers.Add("Cache-Control", "no-cache");
  StreamBody body{
      .next =
      [st, on_step, on_start, on_end, abort_all, record](ChunkSink& sink) {
        if (!st->started) {
          st->started = true;
          on_start(sink);
        }
        // Every choice's runs share one notifier: poll them all, then wait for news on any.
        const auto& notifier = st->runs[0]->notifier();
        for (;;) {
          if (!sink.Writable()) {
            record->client_gone = true;
            abort_all();
            return false;
          }
          const uint64_t seen = notifier->version();
          bool progressed = false;
          GenerationRun::Step step;
          for (size_t i = 0; i < st->runs.size(); ++i) {
            if (st->finished[i] || !st->runs[i]->Next(step, std::chrono::milliseconds(0))) continue;
            progressed = true;
            record->AppendCompletion(step.text);
            on_step(int(i), step, sink);
            if (step.finished) {
              st->finished[i] = true;
              --st->left;
            }
          }
          if (progressed) RecordCompletion(*record, st->runs);
          if (st->left == 0) {
            on_end(sink);
            sink.Write(kSseDone);
            sink.Done();
            return true;
          }
          if (progressed) return true;
          notifier->WaitChange(seen, std::chrono::milliseconds(100));
        }
      },
      .on_end =
      [abort_all](bool completed) {
        if (!completed) abort_all();
      }};
  res.SetStream("text/event-stream", std::move(body));
}

}  // namespace tern::server
