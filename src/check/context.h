// CheckContext: what a check gets to talk to the server, and ChatRequest, the
// one request shape all checks use.
//
// Chat() and ChatStream() build the request body for every dialect at once
// (see BuildChatBody), retry without the optional fields when a server
// rejects them with a 4xx (and then stop sending them), scan every reply for degenerate output, and keep
// a log of what they saw for the degenerate-output summary. They are safe to
// call from several threads (the concurrency check does).
#pragma once

#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "check/chat.h"
#include "check/http_client.h"
#include "check/options.h"
#include "check/server.h"

namespace tern::check {

enum class Thinking { kDefault, kOff, kOn };

struct ChatRequest {
  nlohmann::json messages = nlohmann::json::array();
  int max_tokens = 64;
  Thinking thinking = Thinking::kOff;
  bool logprobs = true;            // so that every reply's logprobs are scanned for NaN
  nlohmann::json tools = nullptr;  // null: none
  bool stream = false;             // ChatStream sets it
  bool ignore_eos = false;
  std::vector<std::string> stop;  // stop strings (empty: none sent)
};

// Optional request fields that some servers reject with a 4xx.
enum Extra : unsigned {
  kReasoningEffort = 1,  // reasoning_effort "none" with thinking off (OpenAI; SGLang; older vLLM rejects it)
  kLogprobs = 2,         // logprobs: true
  kIgnoreEos = 4,        // ignore_eos: true (SGLang, vLLM, llama.cpp extension)
  kAllExtras = 7,
};

// The JSON body of a chat request. Always greedy (temperature 0, seed 0).
//   Thinking::kOff: chat_template_kwargs {enable_thinking:false, thinking:false}
//     (SGLang, vLLM, llama.cpp, tern: Qwen3 templates read enable_thinking) and,
//     when `extras` allows, reasoning_effort "none";
//   Thinking::kOn: chat_template_kwargs {enable_thinking:true, thinking:true};
//   logprobs and ignore_eos when requested and `extras` allows;
//   streams: stream_options {include_usage:true}.
nlohmann::json BuildChatBody(const std::string& model, const ChatRequest& req, unsigned extras);

// One user message: [{"role":"user","content":text}].
nlohmann::json UserMessage(const std::string& text);

class CheckContext {
 public:
  CheckContext(CheckOptions options, HttpClient http, ServerInfo server)
      : options_(std::move(options)), http_(std::move(http)), server_(std::move(server)) {}

  ChatResult Chat(const ChatRequest& req);
  ChatResult ChatStream(const ChatRequest& req);

  const CheckOptions& options() const { return options_; }
  const HttpClient& http() const { return http_; }
  const ServerInfo& server() const { return server_; }

  // The check now running; replies are logged under its name.
  void SetCurrentCheck(const std::string& name);

  struct Scan {
    std::string check;
    std::vector<std::string> findings;  // empty: clean
    std::string excerpt;
  };
  // Every reply's degenerate-output scan so far.
  std::vector<Scan> Scans() const;
  // Remarks about the server learned while running ("rejects reasoning_effort").
  std::vector<std::string> Notes() const;

 private:
  ChatResult Send(const ChatRequest& req, unsigned extras);
  // Sends; on a 4xx that an optional field may have caused, retries without
  // reasoning_effort, then without any extra, and stops sending what the
  // server rejected for the rest of the run.
  ChatResult SendWithFallback(const ChatRequest& req);
  void Record(const ChatResult& r);

  CheckOptions options_;
  HttpClient http_;
  ServerInfo server_;
  mutable std::mutex mu_;
  std::string current_check_;
  std::vector<Scan> scans_;
  unsigned allowed_extras_ = kAllExtras;
  std::vector<std::string> notes_;
};

}  // namespace tern::check
