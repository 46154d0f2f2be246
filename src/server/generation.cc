#include "server/generation.h"

#include <algorithm>
#include <cstring>

#include "server/http_util.h"

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
  return e;
}

GenerationRun::GenerationRun(ServerContext& ctx, RunSpec spec, std::shared_ptr<RequestStream> stream)
    : ctx_(ctx),
      spec_(std::move(spec)),
      stream_(std::move(stream)),
      decoder_(*ctx.tokenizer, spec_.sampling.skip_special_tokens),
      stops_(spec_.sampling.stop),
      start_(std::chrono::steady_clock::now()) {}

GenerationRun::~GenerationRun() {
  if (!done_) stream_->Abort();
  ctx_.Untrack(stream_->id());
}

api::ApiResult<std::unique_ptr<GenerationRun>> GenerationRun::Start(ServerContext& ctx, RunSpec spec) {
  EngineRequest req;
  req.id = spec.id;
  req.prompt = spec.prompt;
  req.sampling = ToEngineSampling(spec.sampling);
  req.max_tokens = spec.sampling.max_new_tokens.value_or(ctx.engine->context_length());
  req.top_logprobs = spec.top_logprobs;
  req.stop_token_ids = spec.sampling.stop_token_ids;
  if (!spec.sampling.ignore_eos)
    for (int32_t id : ctx.eos_token_ids)
      if (std::find(req.stop_token_ids.begin(), req.stop_token_ids.end(), id) == req.stop_token_ids.end())
        req.stop_token_ids.push_back(id);
  if (req.max_tokens <= 0) req.max_tokens = 0;
  SubmitResult sub = ctx.engine->Submit(std::move(req));
  if (!sub.stream) {
    if (sub.http_status == 503) return api::ApiError::Http(503, sub.error);
    return api::ApiError::BadRequest(sub.error);
  }
  ctx.Track(sub.stream);
  return std::unique_ptr<GenerationRun>(new GenerationRun(ctx, std::move(spec), std::move(sub.stream)));
}

void GenerationRun::Abort() { stream_->Abort(); }

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
  for (TokenOutput& t : u.tokens) {
    if (stops_.stopped()) break;
    output_ids_.push_back(t.id);
    ++completion_tokens_;
    const bool hit = stops_.Append(decoder_.Push(t.id));
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
    stops_.Append(decoder_.Flush());
    out.text = stops_.TakeRest();
    out.finished = true;
    done_ = true;
    switch (u.reason) {
      case FinishReason::kStop: out.finish = api::FinishReason::StopToken(u.matched_stop_token); break;
      case FinishReason::kLength:
        out.finish = api::FinishReason::Length(spec_.sampling.max_new_tokens.value_or(completion_tokens_));
        break;
      default:
        out.finish = api::FinishReason::Abort(u.message.empty() ? "The request was aborted." : u.message,
                                              u.abort_status ? std::optional<int>(u.abort_status) : std::nullopt);
    }
    return true;
  }
  out.text = stops_.TakeReady();
  return true;
}

GenerationRun::Step GenerationRun::RunToEnd() {
  Step all, s;
  while (!all.finished) {
    if (!Next(s, std::chrono::milliseconds(1000))) continue;
    all.text += s.text;
    for (auto& t : s.tokens) all.tokens.push_back(std::move(t));
    if (s.finished) {
      all.finished = true;
      all.finish = s.finish;
    }
  }
  return all;
}

void StreamRun(httplib::Response& res, std::shared_ptr<GenerationRun> run, StepWriter on_step, StartWriter on_start) {
  auto started = std::make_shared<bool>(false);
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [run, on_step, on_start, started](size_t, httplib::DataSink& sink) {
        if (!*started) {
          *started = true;
          on_start(sink);
        }
        GenerationRun::Step step;
        for (;;) {
          if (!sink.is_writable()) {
            run->Abort();
            return false;
          }
          if (run->Next(step, std::chrono::milliseconds(100))) break;
        }
        on_step(step, sink);
        if (step.finished) {
          sink.write(kSseDone, std::strlen(kSseDone));
          sink.done();
        }
        return true;
      },
      [run](bool success) {
        if (!success) run->Abort();
      });
}

}  // namespace tern::server
