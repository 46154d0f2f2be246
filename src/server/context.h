// ServerContext: everything the HTTP handlers share. Created once by RunServer.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/chat_prompt.h"
#include "engine/engine.h"
#include "model/config.h"
#include "model/model.h"
#include "server/request_log.h"
#include "server/server.h"
#include "tokenize/tokenizer.h"
#include "tokenize/tokenizer_config.h"

namespace tern::grammar {
class GrammarCompiler;  // grammar/compiler.h
}

namespace tern::server {

enum class Health { kStarting, kUp, kUnhealthy, kShuttingDown };

struct ServerContext {
  ServeOptions opts;
  RequestLogOptions request_log;  // from opts (RunServer)
  std::string model_name;  // served name
  std::unique_ptr<Model> model;
  std::unique_ptr<Engine> engine;
  std::optional<Tokenizer> tokenizer;
  TokenizerConfig tokenizer_config;
  GenerationDefaults generation;
  std::vector<int32_t> eos_token_ids;
  std::optional<ChatPrompt> chat;  // absent when the model has no chat template
  std::string chat_error;          // why, for chat requests
  int64_t created = 0;  // unix seconds at start

  // Structured output: grammars compiled for this tokenizer's vocabulary
  // (and cached), built on first use (GrammarCompilerFor).
  std::once_flag grammars_once;
  std::shared_ptr<grammar::GrammarCompiler> grammars;

  std::atomic<Health> health{Health::kStarting};
  std::atomic<uint64_t> next_request_id{0};
  std::chrono::steady_clock::time_point start_time;
  double load_seconds = 0;

  // HTTP responses by status code, for sglang:http_responses_total.
  std::mutex http_mu;
  std::map<int, uint64_t> http_responses;
  void CountResponse(int status) {
    std::lock_guard lock(http_mu);
    http_responses[status]++;
  }

  // A fresh request id: 32 hex characters, unique per server run.
  std::string NewRequestId();

  // Streams of requests in flight by request id (one per choice), for /abort_request.
  std::mutex streams_mu;
  std::multimap<std::string, std::weak_ptr<RequestStream>> streams;
  void Track(const std::string& id, const std::shared_ptr<RequestStream>& s) {
    std::lock_guard lock(streams_mu);
    streams.emplace(id, s);
  }
  void Untrack(const std::string& id, const std::shared_ptr<RequestStream>& s) {
    std::lock_guard lock(streams_mu);
    auto [lo, hi] = streams.equal_range(id);
    for (auto it = lo; it != hi; ++it)
      if (it->second.lock() == s || it->second.expired()) {
        streams.erase(it);
        return;
      }
  }
};

// Loads the model, tokenizer, chat template and generation defaults into ctx.
Status LoadServerModel(ServerContext& ctx);
// Sizes the KV cache from ctx.opts (checking every flag against what can be
// served) and starts ctx.engine on the loaded model.
Status StartEngine(ServerContext& ctx);
// Auth (--api-key), response counting, JSON bodies for 404/413/500.
class HttpRoutes;
void InstallMiddleware(HttpRoutes& routes, ServerContext& ctx);

}  // namespace tern::server
