// Internal: the chat request's structured fields (messages, tools,
// tool_choice), validated the way SGLang's pydantic models and
// serving_chat._validate_request check them.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "api/field_reader.h"
#include "api/requests.h"

namespace tern::api::internal {

// Validates `messages` into `out` (roles lowercased, tool-call arguments
// parsed into objects, `reasoning` aliased to `reasoning_content`). Shape
// problems become FieldErrors on `r`; the returned error (400
// BadRequestError) is for content tern cannot take: image/audio/video parts,
// and tool-call arguments that are not a JSON object (SGLang's messages).
// `*message_level_tools` reports a system/developer message carrying tools.
std::optional<ApiError> ReadMessages(FieldReader& r, Json* out, bool* message_level_tools);

// `tools`: [{type, function: {name, description, parameters, strict}}].
void ReadTools(FieldReader& r, std::vector<ToolSpec>* tools);

// `tool_choice`: "none" | "auto" | "required" | {type: "function",
// function: {name}}; unset: "none" without tools, else "auto".
void ReadToolChoice(FieldReader& r, bool have_tools, ToolChoice* out);

// The structural check SGLang runs on each tool's `parameters`
// (Draft202012Validator.check_schema, after mapping type aliases such as
// "int" or "str"): returns jsonschema's message for the first problem, e.g.
// "'strng' is not valid under any of the given schemas", or "" when fine.
// `too_deep` is set when the schema nests deeper than 64 levels.
std::string CheckToolSchema(const Json& schema, bool* too_deep);

}  // namespace tern::api::internal
