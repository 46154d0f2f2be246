#include "server/server.h"

#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <random>
#include <thread>

#include <fmt/format.h>
#include <httplib.h>

#include "server/context.h"
#include "server/http_server.h"
#include "server/http_util.h"
#include "server/log.h"
#include "server/routes.h"

namespace tern::server {
namespace {

constexpr int64_t kMaxContextLength = (int64_t(1) << 31) - 1;
constexpr int64_t kMaxPageSize = 1 << 16;

std::atomic<int> g_signal{0};
std::atomic<int> g_signal_count{0};
void OnSignal(int sig) {
  g_signal.store(sig);
  g_signal_count.fetch_add(1);
}

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
  const int64_t per_token = std::max<int64_t>(KvCache::BytesPerToken(m.cache_spec(), kv_dtype), 1);
  const int64_t running = std::max<int64_t>(o.max_running_requests, 1);
  // The budget also holds the recurrent state of every running sequence (hybrid models).
  const int64_t state = SaturatingMul(m.cache_spec().recurrent_state_bytes, running);
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
    const int64_t phys = SaturatingMul(int64_t(sysconf(_SC_PHYS_PAGES)), int64_t(sysconf(_SC_PAGE_SIZE)));
    tokens = std::min<int64_t>(SaturatingMul(context, running), (phys / 4) / per_token);
    tokens = std::max<int64_t>(tokens, std::min<int64_t>(context, 4096));
  }
  return tokens / o.page_size + (tokens % o.page_size != 0);
}

// SGLang's warmup: one short greedy generation through the engine. Returns
// why it failed (the engine's own words: non-finite logits, say), or "".
std::string Warmup(ServerContext& ctx) {
  std::vector<int32_t> prompt;
  if (ctx.tokenizer) {
    auto ids = ctx.tokenizer->Encode("The capital city of France is", false);
    if (ids.ok()) prompt = *ids;
  }
  if (prompt.empty()) prompt = {10, 11, 12};
  EngineRequest req{.id = "warmup", .prompt = prompt, .max_tokens = 8};
  req.sampling.temperature = 0;
  SubmitResult sub = ctx.engine->Submit(req);
  if (!sub.stream) return sub.error;
  RequestUpdate u;
  for (int i = 0; i < 6000; ++i) {  // up to 600 s, as SGLang
    if (g_signal_count.load() > 0) {  // SIGTERM during warm-up: stop now, not after 600 s
      sub.stream->Abort();
      return "interrupted by a signal";
    }
    if (sub.stream->Next(u, std::chrono::milliseconds(100)) && u.finished)
      return u.reason != FinishReason::kAbort ? "" : u.message.empty() ? "aborted" : u.message;
  }
  return "no result within 600 s";
}

}  // namespace

std::string ServerContext::NewRequestId() {
  static thread_local std::mt19937_64 rng(std::random_device{}() ^ uint64_t(std::hash<std::thread::id>{}(std::this_thread::get_id())));
  return fmt::format("{:016x}{:016x}", rng(), next_request_id.fetch_add(1) ^ rng());
}

int RunServer(const ServeOptions& opts) {
  auto ctx = std::make_unique<ServerContext>();
  ctx->opts = opts;
  ctx->model_name = opts.served_model_name.empty() ? opts.model_path : opts.served_model_name;
  ctx->created = UnixNow();
  ctx->start_time = std::chrono::steady_clock::now();
  auto fail = [](const std::string& m) {
    fmt::print(stderr, "tern serve: {}\n", m);  // (a startup failure: always printed)
    return 1;
  };
  const std::optional<LogLevel> level = ParseLogLevel(opts.log_level);
  if (!level) return fail(fmt::format("--log-level {}: expected debug, info, warning or error", opts.log_level));
  CurrentLogLevel() = *level;
  Log(LogLevel::kInfo, "loading {}", opts.model_path);
  if (Status s = LoadServerModel(*ctx); !s.ok()) return fail(s.message());
  ctx->load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - ctx->start_time).count();

  auto kv_dtype = ParseKvCacheDtype(opts.kv_cache_dtype, ctx->model->weight_dtype());
  if (!kv_dtype.ok()) return fail(kv_dtype.status().message());
  if (*kv_dtype == DType::kF8E4M3 && !ctx->model->HasKvCacheScales())
    Log(LogLevel::kWarning, "the checkpoint has no k_scale/v_scale for every layer; the FP8 KV cache uses 1.0 there");
  const int64_t context = opts.context_length > 0 ? opts.context_length : ctx->model->config().max_position_embeddings;
  if (context <= 0) return fail("the model's config has no max_position_embeddings; give --context-length");
  // Positions are int32 in the engine; a larger context cannot be served.
  if (context > kMaxContextLength)
    return fail(fmt::format("--context-length {} is larger than the largest supported ({})", context, kMaxContextLength));
  if (opts.page_size > kMaxPageSize)
    return fail(fmt::format("--page-size {} is larger than the largest supported ({})", opts.page_size, kMaxPageSize));
  auto kv_blocks = KvBlocks(opts, *ctx->model, *kv_dtype, context);
  if (!kv_blocks.ok()) return fail(kv_blocks.status().message());
  EngineOptions eo{.max_running_requests = opts.max_running_requests,
                   .max_queued_requests = opts.max_queued_requests,
                   .chunked_prefill_size = opts.chunked_prefill_size,
                   .context_length = context,
                   .kv = {.block_size = int32_t(opts.page_size),
                          .num_blocks = *kv_blocks,
                          .dtype = *kv_dtype},
                   .enable_prefix_cache = !opts.disable_radix_cache};
  auto engine = Engine::Create(*ctx->model, eo);
  if (!engine.ok()) return fail(engine.status().message());
  ctx->engine = std::move(*engine);
  Log(LogLevel::kInfo,
      "{} loaded in {:.1f} s; KV cache {} tokens ({}, {:.2f} GB), prefix cache {}, context {}, {} threads",
      ctx->model_name, ctx->load_seconds, ctx->engine->max_total_tokens(), DTypeName(*kv_dtype),
             double(ctx->engine->max_total_tokens() * KvCache::BytesPerToken(ctx->model->cache_spec(), *kv_dtype)) / 1e9,
             ctx->engine->prefix_cache_enabled() ? "on" : "off", context, ctx->model->pool().size());

  // Streaming requests hold a connection (and its worker thread) each.
  HttpServer http(HttpLimits{
      .max_body_bytes = size_t(opts.max_request_bytes),
      .read_timeout = std::chrono::milliseconds(int64_t(opts.http_read_timeout_s * 1000)),
      .write_timeout = std::chrono::milliseconds(int64_t(opts.http_write_timeout_s * 1000)),
      .max_connections = size_t(opts.max_connections)});
  InstallMiddleware(http, *ctx);
  AddInfoRoutes(http, *ctx);
  AddTokenizeRoutes(http, *ctx);
  AddGenerateRoutes(http, *ctx);
  AddOpenAiRoutes(http, *ctx);
  http.AddBodyFallbacks();

  // Debian's cpp-httplib is a compiled library that listens with a backlog of
  // 5: a burst of new connections (32 clients each reconnecting as a batch of
  // generations ends) overflowed the accept queue and ~1 request in 4,000 got
  // a connection reset. The socket is captured as httplib creates it and
  // listens again with the system's maximum backlog.
  socket_t listen_socket = INVALID_SOCKET;
  http.set_socket_options([&listen_socket](socket_t sock) {
    httplib::default_socket_options(sock);
    listen_socket = sock;
  });
  if (!http.bind_to_port(opts.host.c_str(), opts.port))
    return fail(fmt::format("cannot listen on {}:{} (in use, or not an address of this machine)", opts.host, opts.port));
  if (listen_socket != INVALID_SOCKET && ::listen(listen_socket, SOMAXCONN) != 0)
    Log(LogLevel::kWarning, "could not raise the listen backlog: {}", std::strerror(errno));
  std::atomic<bool> listener_done{false};
  std::thread listener([&] {
    http.listen_after_bind();
    listener_done = true;
  });
  // cpp-httplib's stop() does nothing until the listener thread has begun
  // listening (is_running): stopping earlier -- a warm-up that fails within
  // milliseconds -- left listen running and the join below waiting forever.
  auto stop_listener = [&] {
    while (!http.is_running() && !listener_done.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    http.stop();
  };

  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGPIPE, SIG_IGN);

  if (opts.skip_server_warmup) {
    ctx->health = Health::kUp;
  } else {
    Log(LogLevel::kInfo, "warming up");
    const std::string warmup_error = Warmup(*ctx);
    ctx->health = warmup_error.empty() ? Health::kUp : Health::kUnhealthy;
    if (ctx->health != Health::kUp) {
      stop_listener();
      listener.join();
      return fail("the warmup generation failed: " + warmup_error);
    }
  }
  Log(LogLevel::kInfo, "listening on http://{}:{} (model \"{}\")", opts.host, opts.port, ctx->model_name);

  while (g_signal_count.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  Log(LogLevel::kInfo, "signal {} received; draining (grace {:.0f} s)", g_signal.load(), opts.shutdown_grace_s);
  ctx->health = Health::kShuttingDown;
  // No new connection, no new request on an open one; idle connections and
  // requests still being read close now. Requests being handled run on.
  http.BeginShutdown();
  stop_listener();
  std::atomic<bool> drained{false};
  std::thread drainer([&] {
    ctx->engine->Drain(std::chrono::milliseconds(int64_t(opts.shutdown_grace_s * 1000)));
    drained = true;
  });
  bool cut_short = false;
  while (!drained.load()) {
    if (!cut_short && g_signal_count.load() > 1) {
      Log(LogLevel::kWarning, "second signal; aborting running requests");
      ctx->engine->AbortAll();
      cut_short = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  drainer.join();
  // Let handlers write their final chunks, then end every connection.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  http.CloseAll();
  listener.join();
  ctx->engine.reset();
  Log(LogLevel::kInfo, "stopped");
  return 0;
}

}  // namespace tern::server
