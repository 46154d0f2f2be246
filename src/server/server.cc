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

#include "server/context.h"
#include "server/http_server.h"
#include "server/http_util.h"
#include "server/log.h"
#include "server/routes.h"
#include "server/sd_notify.h"

namespace tern::server {
namespace {

std::atomic<int> g_signal{0};
std::atomic<int> g_signal_count{0};
void OnSignal(int sig) {
  g_signal.store(sig);
  g_signal_count.fetch_add(1);
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
  const std::optional<RequestLogFormat> log_format = ParseRequestLogFormat(opts.log_requests_format);
  if (!log_format) return fail(fmt::format("--log-requests-format {}: expected text or json", opts.log_requests_format));
  if (opts.log_requests_level < 0 || opts.log_requests_level > 3)
    return fail(fmt::format("--log-requests-level {}: expected 0, 1, 2 or 3", opts.log_requests_level));
  ctx->request_log = {.format = *log_format, .log_requests = opts.log_requests, .level = opts.log_requests_level};
  if (LoggedTextChars(ctx->request_log) > 0)
    Log(LogLevel::kWarning, "--log-requests: request log lines carry prompt and completion text");
  Log(LogLevel::kInfo, "loading {}", opts.model_path);
  if (Status s = LoadServerModel(*ctx); !s.ok()) return fail(s.message());
  ctx->load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - ctx->start_time).count();

  if (Status s = StartEngine(*ctx); !s.ok()) return fail(s.message());

  // Streaming requests hold a connection (and its worker thread) each.
  HttpServer http(HttpLimits{
      .max_body_bytes = size_t(opts.max_request_bytes),
      .read_timeout = std::chrono::milliseconds(int64_t(opts.http_read_timeout_s * 1000)),
      .write_timeout = std::chrono::milliseconds(int64_t(opts.http_write_timeout_s * 1000)),
      .max_connections = size_t(opts.max_connections)});
  http.Mount(ServerRoutes(*ctx));
  if (!http.Listen(opts.host, opts.port))
    return fail(fmt::format("cannot listen on {}:{} (in use, or not an address of this machine)", opts.host, opts.port));
  std::thread listener([&] { http.Run(); });

  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGPIPE, SIG_IGN);

  // Type=notify units (tern service): READY=1 only once /health answers 200.
  auto notify = [](const std::string& state) {
    if (Status s = NotifyServiceManager(state); !s.ok()) Log(LogLevel::kWarning, "{}", s.message());
  };
  if (opts.skip_server_warmup) {
    ctx->health = Health::kUp;
  } else {
    Log(LogLevel::kInfo, "warming up");
    notify("STATUS=warming up");
    const std::string warmup_error = Warmup(*ctx);
    ctx->health = warmup_error.empty() ? Health::kUp : Health::kUnhealthy;
    if (ctx->health != Health::kUp) {
      http.Stop();
      listener.join();
      return fail("the warmup generation failed: " + warmup_error);
    }
  }
  Log(LogLevel::kInfo, "listening on http://{}:{} (model \"{}\")", opts.host, opts.port, ctx->model_name);
  notify(fmt::format("READY=1\nSTATUS=serving {} on http://{}:{}", ctx->model_name, opts.host, opts.port));

  while (g_signal_count.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  Log(LogLevel::kInfo, "signal {} received; draining (grace {:.0f} s)", g_signal.load(), opts.shutdown_grace_s);
  ctx->health = Health::kShuttingDown;
  notify("STOPPING=1\nSTATUS=draining");
  // No new request on any connection (a new one closes at once); idle
  // connections and requests still being read close now. Requests being
  // handled run on, streams included: the listening socket stays open until
  // they are done, as the library ends every stream's writes once it closes.
  http.BeginShutdown();
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
  http.Stop();
  http.CloseAll();
  listener.join();
  ctx->engine.reset();
  Log(LogLevel::kInfo, "stopped");
  return 0;
}

}  // namespace tern::server
