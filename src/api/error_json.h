// Error bodies in the forms SGLang and OpenAI-compatible clients use.
//
//   both    {"object":"error","message","type","param":null,"code":<status>,
//            "error":{"message","type","param":null,"code":<status>}}
//           every error reply of tern's routes (ErrorBody): SGLang's flat
//           fields, which SGLang clients read, and OpenAI's `error` object,
//           which the OpenAI SDKs (and everything built on them: the Vercel
//           AI SDK, LangChain) read. Without it the Node SDK reports only
//           "400 status code (no body)" (issue 24).
//   flat    {"object":"error","message","type","param":null,"code":<status>}
//           SGLang's OpenAI routes (/v1/chat/completions, /v1/completions, ...)
//   nested  {"error":{"message","type","param":null,"code":<status>}}
//           OpenAI and vLLM; SGLang's /v1/responses
//   native  {"error":{"message":"..."}}   SGLang's /generate (400); tern adds
//           type, param and code to the object
//   stream  data: {"error":{flat}}\n\n    errors after the first byte of a
//           stream (SGLang create_streaming_error_response), then [DONE]
#pragma once

#include <string>
#include <string_view>

#include "api/api_error.h"
#include "api/responses.h"

namespace tern::api {

// OpenAI's error object: {"message","type","param","code":<status>}.
Json OpenAiErrorObject(const ApiError& e);
// The "both" form above, as JSON and as text.
Json ErrorJson(const ApiError& e);
std::string ErrorBody(const ApiError& e);
std::string NestedErrorBody(const ApiError& e);

// /generate: validation failures (type "Bad Request") come from FastAPI's
// handler in the flat form (here the "both" form); everything else is the
// native form with OpenAI's fields in its error object.
std::string GenerateErrorBody(const ApiError& e);

// A mid-stream error event, for the OpenAI routes and for /generate
// (data: {"error":{"message":...}}\n\n).
std::string StreamErrorEvent(const ApiError& e);
std::string GenerateStreamErrorEvent(std::string_view message);

// An abort that carries an HTTP status (timeout, queue full, see
// FinishReason::status_code). Before the stream starts, or without
// streaming, it is SGLang's HTTPException: ApiError::Http(status, message),
// type "503". In a stream it is an error event whose type is the status name
// ("SERVICE_UNAVAILABLE") and whose code is the status.
std::string StreamAbortEvent(int status, std::string_view message);
// The message SGLang aborts with when --max-queued-requests is reached (503).
inline constexpr std::string_view kQueueFullMessage = "The request queue is full.";

// 401 body for a missing/wrong API key. SGLang answers {"error":"Unauthorized"},
// a string OpenAI clients show as '401 "Unauthorized"' and the Vercel AI
// SDK's error schema rejects; tern sends the "both" form, message
// "Unauthorized", type "Unauthorized".
std::string UnauthorizedBody();
// 404 body of GET /v1/models/{model} for an unknown model.
std::string ModelNotFoundBody(std::string_view model);

// Python's HTTPStatus(status).name, e.g. 503 -> "SERVICE_UNAVAILABLE".
std::string HttpStatusName(int status);

}  // namespace tern::api
