// Requests of the SGLang-compatible HTTP API, parsed and validated.
//
//   POST /v1/chat/completions  -> ParseChatRequest      (api/chat_request.cc)
//   POST /v1/completions       -> ParseCompletionRequest (api/completion_request.cc)
//   POST /generate (native)    -> ParseGenerateRequest   (api/generate_request.cc)
//
// Each parser takes the decoded JSON body (see ParseJsonBody) and returns the
// request or an ApiError with SGLang's status, `type` and message:
//   - field types and shapes fail like pydantic does in SGLang: 400 "Bad
//     Request", every bad field listed (api/field_reader.h);
//   - SGLang's serving-layer checks (_validate_request) fail with 400
//     "BadRequestError" and SGLang's exact text ("Messages cannot be empty.",
//     "Tool 'f' not found in tools list.", ...);
//   - features tern does not have yet (images, response_format
//     structural_tag) fail with 400 "BadRequestError" and a message naming
//     the feature.
// Unknown fields are ignored, as SGLang's models ignore extra fields. Where
// SGLang and vLLM differ on input both spellings are accepted (nulls for
// defaults, `reasoning` on assistant messages, `include_reasoning`, ...).
//
// What happens after parsing, in SGLang's order:
//   1. chat: PrepareChatTemplateInputs (api/chat_template_inputs.h) gives the
//      messages/tools/kwargs for the template; render; tokenize.
//   2. ResolveSampling (api/sampling.h): merge model defaults, check ranges
//      (SGLang's SamplingParams.verify messages).
//   3. CheckContextLength (api/sampling.h) with the prompt's token count.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/api_error.h"

namespace tern::api {

using Json = nlohmann::ordered_json;  // key order kept (tool schemas reach the template as sent)

// A number as the client wrote it, so messages print it as Python would:
// chat/completions fields are pydantic floats ("got -1.0"); /generate keeps
// JSON integers as ints ("got -1").
struct PyNumber {
  double value = 0;
  bool is_int = false;
  std::string Repr() const;
};

// Structured output: what the reply must match (src/grammar compiles it).
// Chat and completions: response_format json_object (the schema
// {"type":"object"}) or json_schema, or SGLang's `regex` / `ebnf`;
// /generate: sampling_params.json_schema (a string), regex or ebnf. At most
// one per request (SGLang: "Only one of regex, json_schema, or ebnf can be
// set.").
struct ConstraintRequest {
  enum class Kind { kJsonSchema, kRegex, kEbnf };
  Kind kind = Kind::kJsonSchema;
  std::string text;  // the schema as JSON text, the regex or the grammar
};

// Sampling fields as the request set them; std::nullopt = not set.
struct SamplingRequest {
  // Chat: max_completion_tokens or max_tokens (Python truthiness, as SGLang);
  // nullopt runs to the context limit. Completions: max_tokens (default 16).
  // /generate: sampling_params.max_new_tokens (default 128).
  std::optional<int64_t> max_new_tokens;
  // Unset ones come from the model's generation_config, then the defaults
  // 1.0 / 1.0 / -1 / 0.0 / 1.0 (ResolveSampling).
  std::optional<PyNumber> temperature, top_p, top_k, min_p, repetition_penalty;
  PyNumber presence_penalty, frequency_penalty;  // default 0.0
  int64_t min_new_tokens = 0;
  std::vector<std::string> stop;
  std::vector<int32_t> stop_token_ids;
  bool ignore_eos = false;
  bool skip_special_tokens = true;
  bool no_stop_trim = false;
  std::optional<int64_t> seed;
  int64_t n = 1;
  // Keys as sent (strings of token ids); ResolveSampling checks them.
  std::vector<std::pair<std::string, double>> logit_bias;
  std::optional<ConstraintRequest> constraint;
};

enum class ToolChoiceMode { kNone, kAuto, kRequired, kFunction };

struct ToolChoice {
  ToolChoiceMode mode = ToolChoiceMode::kNone;
  std::string function_name;  // kFunction only
};

struct ToolSpec {
  std::string name;
  std::optional<std::string> description;
  Json parameters;  // JSON Schema object, or null when absent
  bool strict = false;
  // The tool as the chat template expects it:
  // {"type":"function","function":{"name","description","parameters","strict"}}.
  Json template_json;
};

struct ChatRequest {
  std::string model = "default";
  // Validated messages: roles lowercased; content is a string, null or a list
  // of parts, as sent; assistant tool_calls[].function.arguments parsed into
  // objects (SGLang normalizes them for the template); vLLM's `reasoning`
  // copied to `reasoning_content`. Flatten with PrepareChatTemplateInputs.
  Json messages = Json::array();
  std::vector<ToolSpec> tools;
  // Default "none" without tools, else "auto" (SGLang).
  ToolChoice tool_choice;
  bool parallel_tool_calls = true;
  SamplingRequest sampling;
  bool logprobs = false;
  int64_t top_logprobs = 0;
  bool stream = false;
  bool include_usage = false;           // stream_options.include_usage
  bool continuous_usage_stats = false;  // stream_options.continuous_usage_stats
  // With `reasoning_effort` / `reasoning` folded in: "none" (or
  // reasoning.enabled false) sets thinking/enable_thinking false, any other
  // effort true, unless the client set them (SGLang).
  Json chat_template_kwargs = Json::object();
  // The effort as sent: a tier ("low", ...) or a float's repr ("0.5").
  std::optional<std::string> reasoning_effort;
  bool separate_reasoning = true;
  bool stream_reasoning = true;
  bool include_reasoning = true;  // vLLM: false drops reasoning from replies
  bool continue_final_message = false;
  std::optional<std::vector<int32_t>> input_ids;  // bypasses the template
  // SGLang: each choice carries the prompt's token ids (non-stream only).
  bool return_prompt_token_ids = false;
  // vLLM: the rendered prompt's logprobs with this many alternatives per
  // position (top-level prompt_logprobs of the reply; non-stream); nullopt: none.
  std::optional<int64_t> prompt_logprobs;
  std::optional<std::string> rid;
  std::optional<std::string> user;
};

// Tokens or text of one prompt.
struct PromptInput {
  std::optional<std::string> text;  // set for text prompts
  std::vector<int32_t> token_ids;   // set for token prompts

  static PromptInput Text(std::string t) {
    PromptInput p;
    p.text = std::move(t);
    return p;
  }
  static PromptInput Tokens(std::vector<int32_t> ids) {
    PromptInput p;
    p.token_ids = std::move(ids);
    return p;
  }
};

struct CompletionRequest {
  std::string model = "default";
  std::vector<PromptInput> prompts;  // one entry unless the client sent a batch
  bool batch = false;
  SamplingRequest sampling;
  std::optional<int64_t> logprobs;  // number of top logprobs; nullopt: none
  bool echo = false;  // with logprobs: the prompt's tokens are scored too (the first has none)
  // vLLM: the prompt's logprobs with this many alternatives per position
  // (choices[].prompt_logprobs); nullopt: none.
  std::optional<int64_t> prompt_logprobs;
  // vLLM: logprobs name tokens "token_id:<id>" instead of their text.
  bool return_tokens_as_token_ids = false;
  bool stream = false;
  bool include_usage = false;
  bool continuous_usage_stats = false;
  std::optional<std::string> rid;
  std::optional<std::string> user;
};

struct GenerateRequest {
  std::vector<PromptInput> prompts;  // `text` wins over `input_ids`
  bool batch = false;
  SamplingRequest sampling;  // from sampling_params
  bool stream = false;
  bool return_logprob = false;
  // input_token_logprobs cover the prompt from this index (its first entry
  // has no logprob, as SGLang's); -1: only the last prompt token.
  int64_t logprob_start_len = -1;
  int64_t top_logprobs_num = 0;
  bool return_text_in_logprobs = false;
  std::optional<std::string> rid;
};

// Bounds on counts a client picks, so none can ask for unbounded work (the
// int64 values also stay far from int32 range once checked).
inline constexpr int64_t kMaxN = 128;                // choices per request (SGLang/vLLM set none; 128 as vLLM's best_of docs)
inline constexpr int64_t kMaxTopLogprobs = 20;       // OpenAI's top_logprobs / logprobs maximum (vLLM's max_logprobs)
inline constexpr int64_t kMaxTopLogprobsNum = 1000;  // /generate top_logprobs_num (SGLang has no bound)
// Prompt logprobs of one request: positions x (1 + alternatives) entries at
// most (about 25 MB of JSON; SGLang and vLLM set no bound).
inline constexpr int64_t kMaxPromptLogprobEntries = int64_t(1) << 20;

// A 400 when scoring `positions` prompt tokens with `top` alternatives each
// would pass kMaxPromptLogprobEntries (`what` names the fields to lower).
std::optional<ApiError> CheckPromptLogprobBudget(int64_t positions, int64_t top, std::string_view what);

// Output logprobs of one request: choices x reply tokens x (1 + alternatives)
// entries at most (a reply of Qwen3.5's whole 262,144-token context with 20
// alternatives fits; 128 choices of it do not). Each entry is held until the
// reply ends and becomes ~30 bytes of JSON, and /generate's stream, as
// SGLang's, repeats every entry so far in each chunk.
inline constexpr int64_t kMaxOutputLogprobEntries = int64_t(1) << 23;

// A 400 when `choices` replies of up to `reply_tokens` tokens (the request's
// max_tokens, else all the room the context leaves) with `top` alternatives
// per token would pass kMaxOutputLogprobEntries (`what` names the fields).
std::optional<ApiError> CheckOutputLogprobBudget(int64_t choices, int64_t reply_tokens, int64_t top,
                                                 std::string_view what);

// Server settings the checks need.
struct ServerLimits {
  std::optional<int64_t> context_length;  // --context-length
  bool allow_auto_truncate = false;       // --allow-auto-truncate
};

// /v1/tokenize (SGLang's TokenizeRequest: `prompt`, or `text`).
struct TokenizeRequest {
  std::string prompt;
  bool add_special_tokens = true;
};
// /v1/detokenize: ids checked against the vocabulary.
struct DetokenizeRequest {
  std::vector<int32_t> tokens;
  bool skip_special_tokens = false;
};
// /abort_request: one request id, or all.
struct AbortRequest {
  std::string rid;  // empty: none
  bool abort_all = false;
};

// Decodes a request body. Invalid JSON is FastAPI's 400 "Bad Request"
// (json_invalid, 'JSON decode error'); a body that is not an object is
// pydantic's model_attributes_type error.
ApiResult<Json> ParseJsonBody(std::string_view body);

ApiResult<ChatRequest> ParseChatRequest(const Json& body, const ServerLimits& limits = {});
ApiResult<CompletionRequest> ParseCompletionRequest(const Json& body);
ApiResult<GenerateRequest> ParseGenerateRequest(const Json& body);
// Field types are checked as pydantic does (400 "Bad Request" listing each
// bad field); a token id outside [0, vocab_size) is a 400 naming its index
// and the bound.
ApiResult<TokenizeRequest> ParseTokenizeRequest(const Json& body);
ApiResult<DetokenizeRequest> ParseDetokenizeRequest(const Json& body, int64_t vocab_size);
ApiResult<AbortRequest> ParseAbortRequest(const Json& body);

}  // namespace tern::api
