// The constraint a chat reply is generated under (structured output, issue
// 19), beside ForceToolCall (chat_output.h):
//   - tool_choice "required" or a named function, with the qwen25 / hermes
//     parser: the rest of the call after ForceToolCall's reply_prefix, so the
//     name is one of the tools and the arguments match that tool's
//     `parameters` JSON schema (in json.dumps' ", " / ": " style, as the
//     chat templates show calls); with parallel_tool_calls more calls may
//     follow. With qwen3_coder: the XML parameters of the tool, in its
//     schema's order, string values as raw text without "</", others as
//     JSON under the property's schema.
//   - otherwise the request's response_format / regex / ebnf, if any.
#pragma once

#include <optional>
#include <string>

#include "api/api_error.h"
#include "api/chat_output.h"
#include "api/requests.h"

namespace tern::api {

// nullopt: unconstrained. A 400 when a tool's parameters cannot be compiled
// (an unsupported keyword, named in the message).
ApiResult<std::optional<ConstraintRequest>> ChatConstraint(const ChatRequest& request, const ServerParsers& server,
                                                           const ForcedToolCall& forced);

// Whether the constraint applies only after "</think>", as SGLang's reasoner
// grammar backend does: with a reasoning parser (separate_reasoning), when
// the prompt opened <think> or the request did not turn thinking off
// (chat_template_kwargs.enable_thinking false), as SGLang's require_reasoning.
bool ConstraintAfterReasoning(const ChatParseConfig& config, const ChatRequest& request);

}  // namespace tern::api
