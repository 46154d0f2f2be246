// Response bodies and SSE chunks exactly as SGLang sends them.
//
// All JSON is compact (no spaces), as orjson/pydantic write it; keys come in
// SGLang's (pydantic field) order. Streams are "data: <json>\n\n" events that
// always end with kSseDone. Shapes (serving_chat.py, serving_completions.py,
// sse_utils.py, protocol.py):
//
// chat.completion:
//   {"id","object":"chat.completion","created","model",
//    "choices":[{"index","message":{"role":"assistant","content":"..." (never
//      null),"reasoning_content":"..."|null,"tool_calls":[...]|null,
//      "reasoning": same as reasoning_content (vLLM's newer name; optional)},
//      "logprobs":null|{"content":[...]},"finish_reason","matched_stop"}],
//    "usage":{...},"metadata":{"weight_version":"default"}}
// chat.completion.chunk (content/reasoning/role/finish chunks omit null
// delta fields, like SGLang's msgspec encoder):
//   {"id","object":"chat.completion.chunk","created","model",
//    "choices":[{"index","delta":{...},"logprobs":null,"finish_reason":null,
//      "matched_stop":null}]}            (+ "usage" with continuous_usage_stats)
//   first chunk per choice: delta {"role":"assistant","content":""};
//   tool calls: delta {"tool_calls":[{"id","index","type":"function",
//     "function":{"name","arguments"}}]} for a call's first piece, then
//     {"tool_calls":[{"index","function":{"arguments"}}]} (OpenAI's form;
//     SGLang's pydantic chunks spell the missing fields as nulls);
//   finish chunk: delta {} with finish_reason ("stop" -> "tool_calls" when
//     the choice streamed tool calls) and matched_stop (kept, unlike the
//     non-stream reply which clears it for tool calls);
//   usage chunk: "choices":[] and "usage".
// usage: {"prompt_tokens","total_tokens","completion_tokens",
//   "prompt_tokens_details":null|{"cached_tokens":K},"reasoning_tokens":R,
//   "completion_tokens_details":{"reasoning_tokens":R}} — SGLang's top-level
//   reasoning_tokens plus OpenAI's completion_tokens_details.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/api_error.h"
#include "api/tool_parser.h"

namespace tern::api {

using Json = nlohmann::ordered_json;

inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";

// Compact JSON text; invalid UTF-8 (never produced by a correct detokenizer)
// is replaced by U+FFFD instead of failing.
std::string ToJsonText(const Json& value);
// "data: <json>\n\n".
std::string SseEvent(const Json& value);

// Why a choice stopped: SGLang's finish_reason dict.
struct FinishReason {
  enum class Kind { kStop, kLength, kAbort };
  Kind kind = Kind::kStop;
  // kStop: the stop token id (EOS included) or stop string that matched.
  std::variant<std::monostate, int32_t, std::string> matched;
  int64_t length = 0;  // kLength: max_new_tokens
  std::string message;  // kAbort
  // kAbort caused by an error (timeout, queue full, ...): streams end with an
  // error chunk carrying this status instead of a finish chunk.
  std::optional<int> status_code;

  static FinishReason StopToken(int32_t id);
  static FinishReason StopString(std::string s);
  static FinishReason Length(int64_t max_new_tokens);
  static FinishReason Abort(std::string message, std::optional<int> status_code = std::nullopt);
};
// "stop" | "length" | "abort".
std::string_view FinishReasonType(const FinishReason& f);
// The native meta_info form: {"type":"stop","matched":151645},
// {"type":"length","length":128}, {"type":"abort","message":"..."}.
Json FinishReasonJson(const FinishReason& f);

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;  // reasoning tokens included
  int64_t reasoning_tokens = 0;
  // Set with --enable-cache-report; prompt_tokens_details appears when > 0.
  std::optional<int64_t> cached_tokens;
};
Json UsageJson(const Usage& u);

struct TopLogprob {
  int32_t id = 0;
  std::string token;  // decoded text of the token
  float logprob = 0;
};
struct TokenLogprob {
  int32_t id = 0;
  std::string token;
  float logprob = 0;
  std::vector<TopLogprob> top;  // best first
  // A prompt's first scored token has no logprob: null (SGLang's
  // [null, id, text], OpenAI's echo, vLLM's prompt_logprobs[0]).
  bool null_logprob = false;
  int32_t rank = 0;  // prompt logprobs: 1-based rank of `id` in its row (vLLM)
};
// Chat: {"content":[{"token","bytes","logprob","top_logprobs":[{"token","bytes","logprob"}]}]}.
Json ChatLogprobsJson(const std::vector<TokenLogprob>& tokens);
// Completions: {"text_offset":[-1,...],"token_logprobs":[...],"tokens":[...],
// "top_logprobs":[{token: logprob} per token, first occurrence of a text wins]}
// (a null_logprob token: null in token_logprobs and top_logprobs).
Json CompletionLogprobsJson(const std::vector<TokenLogprob>& tokens);
// vLLM's prompt_logprobs: [null, {"<id>": {"logprob","rank","decoded_token"}}, ...],
// each position's own token first, then its top alternatives by rank.
Json PromptLogprobsJson(const std::vector<TokenLogprob>& tokens);

// What every response of one request shares.
struct ResponseMeta {
  std::string id;       // "chatcmpl-…", "cmpl-…" (NewRequestId) or the client's rid
  int64_t created = 0;  // Unix seconds
  std::string model;    // the request's model field, echoed
  std::string weight_version = "default";
  bool reasoning_alias = true;  // also send reasoning_content as "reasoning"
};

// "chatcmpl-" / "cmpl-" / "" + 32 random hex digits (uuid4().hex).
std::string NewRequestId(std::string_view prefix);

// ---- /v1/chat/completions ----

struct ChatChoice {
  std::string content;
  std::string reasoning;  // "" -> reasoning_content null
  std::vector<ToolCall> tool_calls;
  FinishReason finish;
  std::optional<std::vector<TokenLogprob>> logprobs;
  std::optional<std::vector<int32_t>> prompt_token_ids;  // return_prompt_token_ids
};
// prompt_logprobs (vLLM's top-level field, PromptLogprobsJson) only when given.
Json ChatCompletionJson(const ResponseMeta& meta, const std::vector<ChatChoice>& choices,
                        const Usage& usage, const std::vector<TokenLogprob>* prompt_logprobs = nullptr);

// Builds the chunks of one streamed chat completion. Not thread-safe.
class ChatStreamEncoder {
 public:
  explicit ChatStreamEncoder(ResponseMeta meta) : meta_(std::move(meta)) {}

  // The first chunk of a choice: delta {"role":"assistant","content":""}.
  std::string Role(int index);
  // Delta chunks; `usage` is attached with continuous_usage_stats,
  // `logprobs` (ChatLogprobsJson) to the chunk it belongs to.
  std::string Reasoning(int index, std::string_view text, const Usage* usage = nullptr,
                        const Json* logprobs = nullptr);
  std::string Content(int index, std::string_view text, const Usage* usage = nullptr,
                      const Json* logprobs = nullptr);
  std::string ToolCall(int index, const ToolCallDelta& call, const Usage* usage = nullptr);
  // Finish chunk (see the header comment for tool_calls).
  std::string Finish(int index, const FinishReason& finish);
  std::string UsageChunk(const Usage& usage);

 private:
  Json Chunk(int index, Json delta, const Usage* usage, const Json* logprobs) const;

  ResponseMeta meta_;
  std::vector<bool> streamed_tool_calls_;  // per choice index
};

// ---- /v1/completions ----

struct CompletionChoice {
  std::string text;  // echo: the prompt text first
  FinishReason finish;
  std::optional<std::vector<TokenLogprob>> logprobs;  // echo: the prompt's tokens first
  std::optional<std::vector<TokenLogprob>> prompt_logprobs;  // vLLM's field, only when asked
};
Json CompletionJson(const ResponseMeta& meta, const std::vector<CompletionChoice>& choices,
                    const Usage& usage);

class CompletionStreamEncoder {
 public:
  explicit CompletionStreamEncoder(ResponseMeta meta) : meta_(std::move(meta)) {}
  // One text_completion chunk: {"index","text","logprobs","finish_reason",
  // "matched_stop"} and "usage" (null unless continuous usage is given), as
  // SGLang's pydantic chunks.
  std::string Chunk(int index, std::string_view text, const FinishReason* finish = nullptr,
                    const std::vector<TokenLogprob>* logprobs = nullptr,
                    const Usage* usage = nullptr) const;
  // Final usage chunk ("choices":[]; null fields dropped).
  std::string UsageChunk(const Usage& usage) const;

 private:
  ResponseMeta meta_;
};

// ---- native /generate ----

struct GenerateOutput {
  std::string id;
  // SGLang sends the whole text so far in every streamed chunk (not a
  // delta); the final reply carries the whole text too.
  std::string text;
  std::vector<int32_t> output_ids;  // likewise cumulative
  std::optional<FinishReason> finish;  // null while running
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cached_tokens = 0;
  std::optional<double> e2e_latency;  // seconds
  std::string weight_version = "default";
  // return_logprob: meta_info.output_token_logprobs [[logprob, id, text|null]]
  // and, with top_logprobs_num > 0, output_top_logprobs.
  std::optional<std::vector<TokenLogprob>> logprobs;
  // return_logprob: input_token_logprobs, one entry per prompt token from
  // logprob_start_len on, the first [null, id, text|null] (SGLang), and with
  // top_logprobs_num > 0 input_top_logprobs ([null, [[logprob, id, text], ...], ...]).
  // Unset: both are [] (a streamed chunk before the last).
  std::optional<std::vector<TokenLogprob>> input_logprobs;
  bool text_in_logprobs = false;
  int64_t top_logprobs_num = 0;
  // Streams of n > 1 requests tag each chunk with its choice (SGLang's
  // _handle_batch_request sets "index"); non-stream replies are a list.
  std::optional<int64_t> index;
};
// {"text","output_ids","meta_info":{"id","finish_reason","prompt_tokens",
//  "weight_version","total_retractions","completion_tokens","cached_tokens",
//  ["output_token_logprobs","output_top_logprobs"],["e2e_latency"]}[,"index"]}
Json GenerateJson(const GenerateOutput& out);

// ---- /v1/models ----

// {"id","object":"model","created","owned_by":"sglang","root","parent":null,
//  "max_model_len"}
Json ModelCardJson(std::string_view served_model_name, int64_t created, int64_t max_model_len);
// {"object":"list","data":[card]}
Json ModelListJson(std::string_view served_model_name, int64_t created, int64_t max_model_len);

}  // namespace tern::api
