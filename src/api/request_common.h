// Internal: field readers shared by the chat, completion and /generate
// request parsers.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "api/field_reader.h"
#include "api/requests.h"

namespace tern::api::internal {

// Number fields as PyNumber. `as_float`: pydantic float fields print as
// floats even when sent as integers.
std::optional<PyNumber> ReadNumber(FieldReader& r, std::string_view key, bool as_float);
std::optional<PyNumber> ReadIntNumber(FieldReader& r, std::string_view key);

// `stop`: a string or a list of strings.
void ReadStop(FieldReader& r, std::string_view key, std::vector<std::string>* out);
// A list of integer token ids (stop_token_ids, input_ids).
std::optional<std::vector<int32_t>> ReadTokenIds(FieldReader& r, std::string_view key);

// The OpenAI-style sampling fields chat and completions share:
// temperature, top_p, top_k, min_p, repetition_penalty, presence_penalty,
// frequency_penalty, min_tokens, stop, stop_token_ids, ignore_eos,
// skip_special_tokens, no_stop_trim, seed, n, logit_bias.
void ReadOpenAiSampling(FieldReader& r, SamplingRequest* s);

// stream_options {include_usage, continuous_usage_stats}.
void ReadStreamOptions(FieldReader& r, bool* include_usage, bool* continuous_usage_stats);

// `rid`: a string (a one-element list is accepted as well) of at most
// kMaxRidBytes. Both it and `model` are repeated in every streamed chunk of
// every choice (and the rid in the X-Request-Id header and the access log).
inline constexpr size_t kMaxRidBytes = 1024;
inline constexpr size_t kMaxModelBytes = 4096;
std::optional<std::string> ReadRid(FieldReader& r);
// `model`: a string of at most kMaxModelBytes.
std::optional<std::string> ReadModel(FieldReader& r);

// The structured-output fields of a chat or completion body
// (response_format json_object / json_schema, regex, ebnf) into
// s->constraint; a 400 for response_format structural_tag (not supported),
// for a top-level json_schema (a /generate sampling parameter), and when more
// than one is set. Run after the SGLang checks.
std::optional<ApiError> ReadConstraint(const Json& body, SamplingRequest* s);
// The same for /generate's sampling_params (json_schema, regex and ebnf are
// strings there).
std::optional<ApiError> ReadNativeConstraint(const Json& sampling_params, SamplingRequest* s);

// Pydantic checks of response_format's shape (type literal, json_schema.name
// required); appends FieldErrors.
void ValidateResponseFormat(FieldReader& r);

// n must be in [1, kMaxN] (vLLM's message below the range: "n must be at
// least 1, got 0."): each choice is a sequence in the engine.
std::optional<ApiError> CheckN(const SamplingRequest& s);

// top_logprobs / logprobs (OpenAI's routes) must be in [0, kMaxTopLogprobs];
// top_logprobs_num (/generate) in [0, kMaxTopLogprobsNum]. `what` names the field.
std::optional<ApiError> CheckTopLogprobs(std::string_view what, int64_t value, int64_t max);

}  // namespace tern::api::internal
