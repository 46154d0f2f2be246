// ChatResult: one chat completion as the checks see it, read from any of the
// server dialects (SGLang, vLLM, llama.cpp, tern) without assuming one.
//
// Dialects handled here:
//   - reasoning in "reasoning_content" (SGLang, llama.cpp, vLLM before late 2025)
//     or "reasoning" (vLLM after PR #27752); both may be present.
//   - content null (vLLM; a thinking model that ran out of tokens) or "" (SGLang).
//   - errors flat {"object":"error","message":..} (SGLang), nested
//     {"error":{"message":..}} (vLLM, llama.cpp, OpenAI), {"error":"Unauthorized"}
//     (SGLang's API-key middleware), {"detail":..} (FastAPI 404s).
//   - streams with or without a usage chunk, with or without null delta fields,
//     with an error chunk mid-stream, cut off before [DONE].
//   - NaN/Infinity in the JSON, invalid UTF-8 (see json_text.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tern::check {

struct ToolCall {
  std::string id;
  std::string name;
  std::string arguments;  // the JSON text as sent
};

struct ApiError {
  std::string message;
  std::string type;
  std::string shape;  // "flat", "nested", "string", "detail", "text" (not JSON), "empty"
};

struct ChatResult {
  // --- transport ---
  int http_status = 0;  // 0: no HTTP reply at all
  std::string failure;  // why there is no usable reply ("" when there is one)
  std::string notes;    // retries and dialect remarks, for the report

  // --- the reply ---
  std::optional<std::string> content;    // nullopt: null or missing
  std::optional<std::string> reasoning;  // nullopt: null or missing in both fields
  std::string reasoning_field;           // "reasoning_content", "reasoning" or ""
  std::vector<ToolCall> tool_calls;
  std::string finish_reason;
  std::optional<int64_t> prompt_tokens, completion_tokens;

  // --- logprobs (chosen tokens only) ---
  bool has_logprobs = false;
  std::vector<std::string> tokens;
  std::vector<double> logprobs;  // NaN where the server sent null/NaN/Infinity
  // --- what sanitizing the JSON found (see json_text.h) ---
  int nonfinite_json = 0;
  int invalid_utf8 = 0;

  // --- timing ---
  double latency_s = 0;          // request sent .. reply complete
  std::optional<double> ttft_s;  // streams: first content/reasoning/tool delta

  // --- streams ---
  bool streamed = false;
  int events = 0;            // SSE events with data
  bool done_seen = false;    // "data: [DONE]" arrived
  bool usage_seen = false;   // a chunk carried a usage object
  int content_chunks = 0;    // chunks that carried content or reasoning text
  std::string stream_error;  // an error chunk, a JSON-less event, a drop before [DONE]

  std::optional<ApiError> error;  // the server's error body, when http_status is not 2xx

  bool ok() const { return failure.empty(); }
  std::string ContentOr(std::string_view fallback = "") const { return content ? *content : std::string(fallback); }
  // Content, reasoning and tool-call text together (for degenerate-output scans).
  std::string AllText() const;
};

// Reads an error body in any dialect. `body` may be anything.
ApiError ParseApiError(std::string_view body);

// Reads a non-streamed /v1/chat/completions reply. Never fails: problems go to
// result.failure ("HTTP 400: <message>", "reply is not JSON: ...", "no choices").
ChatResult ParseChatReply(int http_status, std::string_view body);

// Assembles a streamed reply from its SSE events, as they arrive.
class StreamAssembler {
 public:
  StreamAssembler() { r_.streamed = true; }
  void OnEvent(std::string_view data, double t_s);
  // Call once at the end, for a 2xx reply. `transport_error` is set when the
  // connection failed mid-body; `partial` holds bytes of an unfinished event.
  ChatResult Finish(int http_status, double latency_s, std::string_view transport_error, std::string_view partial);

 private:
  ChatResult r_;
  std::string content_, reasoning_;
  bool any_content_ = false, any_reasoning_ = false;
};

}  // namespace tern::check
