// Loading the served model and the cross-cutting HTTP behaviour.
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <fmt/format.h>

#include "kernels/cpu_features.h"
#include "api/parser_detect.h"
#include "api/reasoning_parser.h"
#include "api/tool_parser.h"
#include "chat/vocab_check.h"
#include "dist/runtime.h"
#include "api/error_json.h"
#include "api/sampling.h"
#include "server/context.h"
#include "server/http_routes.h"
#include "server/http_util.h"
#include "server/log.h"
#include "server/routes.h"

namespace tern::server {

namespace {
// SGLang's switch for a --context-length longer than the model's
// max_position_embeddings (its get_bool_env_var: "1" or "true", any case).
bool AllowLongerContext() {
  const char* env = std::getenv("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN");
  if (env == nullptr) return false;
  std::string v(env);
  for (char& c : v) c = char(std::tolower(static_cast<unsigned char>(c)));
  return v == "1" || v == "true";
}

// Positions are int32 in the engine; a larger context cannot be served.
constexpr int64_t kMaxContextLength = (int64_t(1) << 31) - 1;

// As SGLang: positions past the ones the model was trained for give unreliable
// output, so a longer context is the user's explicit choice. 0: the model's.
Status CheckServedContextLength(int64_t context, int64_t trained) {
  if (context > kMaxContextLength)
    return Status::Errorf("--context-length {} is larger than the largest supported ({})", context, kMaxContextLength);
  if (trained <= 0 || context <= trained) return Status::Ok();
  if (!AllowLongerContext())
    return Status::Errorf("--context-length {} is longer than the model's max_position_embeddings ({}); set "
                          "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 to serve positions it was not trained for",
                          context, trained);
  Log(LogLevel::kWarning, "--context-length {} is longer than the model's max_position_embeddings ({}): output past "
      "it may be unreliable (SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN is set)", context, trained);
  return Status::Ok();
}

// generation_config.json's sampling defaults go into every request that
// leaves them out; one out of range (temperature -1) would make every such
// request a 400. Each invalid one is dropped with a warning naming it, and
// the server starts: the checkpoint's other files are still good.
void DropInvalidGenerationDefaults(GenerationDefaults& g, const std::string& dir) {
  auto check = [&](const char* field, auto& value, auto set) {
    if (!value) return;
    api::GenerationDefaults only;
    set(only, *value);
    auto r = api::ResolveSampling({}, only, /*vocab_size=*/1);
    if (r.ok()) return;
    Log(LogLevel::kWarning, "{}/generation_config.json: ignoring {}: {}", dir, field, r.error().message);
    value.reset();
  };
  check("temperature", g.temperature, [](api::GenerationDefaults& d, double v) { d.temperature = v; });
  check("top_p", g.top_p, [](api::GenerationDefaults& d, double v) { d.top_p = v; });
  check("min_p", g.min_p, [](api::GenerationDefaults& d, double v) { d.min_p = v; });
  check("repetition_penalty", g.repetition_penalty, [](api::GenerationDefaults& d, double v) { d.repetition_penalty = v; });
  check("top_k", g.top_k, [](api::GenerationDefaults& d, int64_t v) { d.top_k = v; });
}
}  // namespace

namespace {

// --reasoning-parser / --tool-call-parser: "auto" reads them off the chat
// template, "none" turns them off; what is chosen is printed, as SGLang users
// would otherwise have to know which flags their model needs.
Status ResolveParsers(ServerContext& ctx) {
  ServeOptions& o = ctx.opts;
  const api::DetectedParsers d = api::DetectParsers(ctx.chat ? ctx.chat->source() : "");
  auto resolve = [](std::string& name, const std::string& detected, const std::string& why, const char* flag,
                    bool known) -> Result<std::string> {
    if (name == "auto") {
      name = detected;
      return fmt::format("{} {} ({})", flag, detected.empty() ? "none" : detected, why);
    }
    if (name == "none") name.clear();
    if (!name.empty() && !known) return Status::Errorf("--{} {}: unknown parser", flag, name);
    return fmt::format("{} {} (from the command line)", flag, name.empty() ? "none" : name);
  };
  TERN_ASSIGN_OR_RETURN(std::string r, resolve(o.reasoning_parser, d.reasoning, d.reasoning_why, "reasoning-parser",
                                               api::ReasoningParserFromName(o.reasoning_parser).has_value()));
  TERN_ASSIGN_OR_RETURN(std::string t, resolve(o.tool_call_parser, d.tool_call, d.tool_call_why, "tool-call-parser",
                                               api::ToolParserFromName(o.tool_call_parser).has_value()));
  Log(LogLevel::kInfo, "{}; {}", r, t);
  return Status::Ok();
}

}  // namespace

Status LoadServerModel(ServerContext& ctx) {
  const std::string& dir = ctx.opts.model_path;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return Status::Errorf("model directory {} does not exist", dir);
  TERN_ASSIGN_OR_RETURN(Tokenizer tok, Tokenizer::FromFile((std::filesystem::path(dir) / "tokenizer.json").string()));
  ctx.tokenizer.emplace(std::move(tok));
  TERN_ASSIGN_OR_RETURN(ctx.tokenizer_config, LoadTokenizerConfig(dir));
  TERN_ASSIGN_OR_RETURN(ctx.generation, LoadGenerationDefaults(dir));
  DropInvalidGenerationDefaults(ctx.generation, dir);
  ChatPromptOptions co;
  // SGLang takes --chat-template as a file path (or one of its built-in
  // names, which tern has none of); tern also takes template text. A value
  // that is neither an existing file nor looks like a template is a typo'd
  // path: an error, not a template that renders the path.
  if (const std::string& t = ctx.opts.chat_template; !t.empty()) {
    std::error_code fec;
    const bool looks_like_text = t.find("{%") != std::string::npos || t.find("{{") != std::string::npos;
    if (!looks_like_text && !std::filesystem::is_regular_file(t, fec))
      return Status::Errorf("--chat-template {}: no such file (and not template text: it has no '{{%' or '{{{{')", t);
  }
  co.template_override = ctx.opts.chat_template;
  if (!ctx.opts.default_chat_template_kwargs.empty()) {
    co.default_kwargs = nlohmann::ordered_json::parse(ctx.opts.default_chat_template_kwargs, nullptr, false);
    if (co.default_kwargs.is_discarded() || !co.default_kwargs.is_object())
      return Status::Error("--default-chat-template-kwargs must be a JSON object");
  }
  auto chat = ChatPrompt::Load(dir, co);
  if (chat.ok()) {
    ctx.chat.emplace(std::move(*chat));
  } else {
    if (!ctx.opts.chat_template.empty()) return chat.status();
    ctx.chat_error = chat.status().message();
    Log(LogLevel::kWarning, "{}; /v1/chat/completions will answer 400", ctx.chat_error);
  }
  TERN_RETURN_IF_ERROR(ResolveParsers(ctx));
  // Refused before the weights load (LoadModel reports a config it cannot read).
  if (auto config = LoadModelConfig(dir); config.ok())
    TERN_RETURN_IF_ERROR(CheckServedContextLength(ctx.opts.context_length, config->max_position_embeddings));
  TERN_ASSIGN_OR_RETURN(ctx.model, LoadModel(dir, ServedModelLoadOptions(ctx.opts)));
  TERN_RETURN_IF_ERROR(CheckTokenizerFitsModel(*ctx.tokenizer, ctx.model->config().vocab_size, dir));
  ctx.eos_token_ids = ctx.generation.eos_token_ids.empty() ? ctx.model->config().eos_token_ids : ctx.generation.eos_token_ids;
  if (ctx.tokenizer_config.eos_token) {
    auto id = ctx.tokenizer->TokenToId(*ctx.tokenizer_config.eos_token);
    if (id && std::find(ctx.eos_token_ids.begin(), ctx.eos_token_ids.end(), *id) == ctx.eos_token_ids.end())
      ctx.eos_token_ids.push_back(*id);
  }
  return Status::Ok();
}

namespace {

constexpr int64_t kMaxPageSize = 1 << 16;

// a*b, or INT64_MAX when it does not fit (a, b >= 0).
int64_t SaturatingMul(int64_t a, int64_t b) {
  int64_t out;
  return __builtin_mul_overflow(a, b, &out) ? INT64_MAX : out;
}

// KV cache capacity in blocks: --max-total-tokens, else --kv-cache-memory-gb,
// else a default of enough blocks for max_running_requests full-length
// sequences, capped at a quarter of physical memory. Every product is
// checked: a flag too large for the machine is an error naming it, never a
// wrapped (smaller) cache.
Result<int64_t> KvBlocks(const ServeOptions& o, const Model& m, DType kv_dtype, int64_t context) {
  const EngineOptions engine_view{.enable_prefix_cache = !o.disable_radix_cache, .speculative = o.speculative};
  const int64_t per_token = std::max<int64_t>(KvCache::BytesPerToken(Engine::CacheSpecFor(m, engine_view), kv_dtype), 1);
  const int64_t running = std::max<int64_t>(o.max_running_requests, 1);
  // The budget also holds the recurrent state of every running sequence
  // (hybrid models), in as many slots as the engine will give each.
  const int64_t per_seq = Engine::StateSlotsPerSequence(m, engine_view);
  const int64_t slots = SaturatingMul(running, per_seq);
  const int64_t state = SaturatingMul(m.cache_spec().recurrent_state_bytes, slots);
  if (state == INT64_MAX) return Status::Errorf("--max-running-requests {} needs more recurrent-state memory than can be addressed", running);
  int64_t tokens = o.max_total_tokens;
  if (tokens > 0 && SaturatingMul(tokens, per_token) == INT64_MAX)
    return Status::Errorf("--max-total-tokens {} needs more than 2^63 bytes of KV cache", tokens);
  if (tokens <= 0 && o.kv_cache_memory_gb > 0) {
    if (!(o.kv_cache_memory_gb * 1e9 < 9.2e18))
      return Status::Errorf("--kv-cache-memory-gb {} is larger than any machine's memory", o.kv_cache_memory_gb);
    tokens = std::max<int64_t>(int64_t(o.kv_cache_memory_gb * 1e9) - state, per_token) / per_token;
  }
  if (tokens <= 0) {
    // A quarter of this host's memory for the KV caches of all its ranks
    // (per_token is one rank's share of a token: ranks on one host split it).
    const int64_t phys = SaturatingMul(int64_t(sysconf(_SC_PHYS_PAGES)), int64_t(sysconf(_SC_PAGE_SIZE)));
    tokens = std::min<int64_t>(SaturatingMul(context, running), (phys / 4 / std::max(dist::LocalSize(), 1)) / per_token);
    tokens = std::max<int64_t>(tokens, std::min<int64_t>(context, 4096));
  }
  return tokens / o.page_size + (tokens % o.page_size != 0);
}

}  // namespace

LoadOptions ServedModelLoadOptions(const ServeOptions& o) {
  return {.threads = o.threads,
          .numerics = o.quant_numerics,
          .weight_check = o.skip_weight_check ? WeightCheck::kSkip
                          : o.strict_weights  ? WeightCheck::kError
                                              : WeightCheck::kWarn,
          .tp = o.tp,
          .ep = o.ep,
          .report_progress = true,
          .huge_pages = o.huge_pages,
          // Rank 0 refuses a context past the model's unless allowed, before the
          // weights load; every rank then accepts what it serves, whatever its
          // own environment (mpirun passes variables to other hosts only with -x).
          .max_positions = o.context_length};
}

Status StartEngine(ServerContext& ctx) {
  const ServeOptions& o = ctx.opts;
  auto kv_dtype = ParseKvCacheDtype(o.kv_cache_dtype, ctx.model->weight_dtype());
  if (!kv_dtype.ok()) return kv_dtype.status();
  if (*kv_dtype == DType::kF8E4M3 && !ctx.model->HasKvCacheScales())
    Log(LogLevel::kWarning, "the checkpoint has no k_scale/v_scale for every layer; the FP8 KV cache uses 1.0 there");
  const int64_t context = o.context_length > 0 ? o.context_length : ctx.model->config().max_position_embeddings;
  if (context <= 0) return Status::Error("the model's config has no max_position_embeddings; give --context-length");
  if (context > kMaxContextLength)
    return Status::Errorf("--context-length {} is larger than the largest supported ({})", context, kMaxContextLength);
  if (o.page_size > kMaxPageSize)
    return Status::Errorf("--page-size {} is larger than the largest supported ({})", o.page_size, kMaxPageSize);
  auto kv_blocks = KvBlocks(o, *ctx.model, *kv_dtype, context);
  if (!kv_blocks.ok()) return kv_blocks.status();
  EngineOptions eo{.max_running_requests = o.max_running_requests,
                   .max_queued_requests = o.max_queued_requests,
                   .chunked_prefill_size = o.chunked_prefill_size,
                   .context_length = context,
                   .kv = {.block_size = int32_t(o.page_size),
                          .num_blocks = *kv_blocks,
                          .dtype = *kv_dtype},
                   .enable_prefix_cache = !o.disable_radix_cache,
                   .speculative = o.speculative};
  auto engine = Engine::Create(*ctx.model, eo);
  if (!engine.ok()) return engine.status();
  ctx.engine = std::move(*engine);
  if (o.speculative.algorithm == SpeculativeAlgorithm::kNgram)
    Log(LogLevel::kInfo, "speculative decoding: NGRAM (prompt lookup), up to {} drafts per verify, suffixes of {}-{} tokens",
        o.speculative.num_draft_tokens, o.speculative.ngram_min_match, o.speculative.ngram_max_match);
  if (o.speculative.algorithm == SpeculativeAlgorithm::kNextn)
    Log(LogLevel::kInfo, "speculative decoding: NEXTN (the model's MTP head, {} layer{}), {} drafts per verify, top-k 1{}",
        ctx.model->mtp_num_layers(), ctx.model->mtp_num_layers() == 1 ? "" : "s", o.speculative.num_steps,
        o.speculative.token_map.empty()
            ? std::string()
            : fmt::format(", drafting among the token map's {} ids", o.speculative.token_map.size()));
  if (const int64_t sb = ctx.engine->snapshot_blocks(); sb > 0)
    Log(LogLevel::kInfo, "prefix cache keeps recurrent-state snapshots: {:.2f} MB each ({} KV blocks of the pool)",
        double(ctx.model->cache_spec().recurrent_state_bytes) / 1e6, sb);
  Log(LogLevel::kInfo,
      "{} loaded in {:.1f} s; KV cache {} tokens ({}, {:.2f} GB), prefix cache {}, context {}, {} threads, cpu path {}",
      ctx.model_name, ctx.load_seconds, ctx.engine->max_total_tokens(), DTypeName(*kv_dtype),
      double(ctx.engine->max_total_tokens() * KvCache::BytesPerToken(ctx.engine->cache_spec(), *kv_dtype)) / 1e9,
      ctx.engine->prefix_cache_enabled() ? "on" : "off", context, ctx.model->pool().size(),
      kernels::CpuPathDescription());

  return Status::Ok();
}

}  // namespace tern::server
