#include "api/structured_output.h"

#include <algorithm>

#include <fmt/format.h>

#include "grammar/ebnf_parser.h"
#include "grammar/json_schema.h"

namespace tern::api {
namespace {

// The JSON body of a function name as json.dumps writes it inside quotes.
std::string QuotedBody(const std::string& name) {
  const std::string q = Json(name).dump();
  return q.substr(1, q.size() - 2);
}

// qwen3_coder's XML parameters of one tool: <parameter=KEY>\nVALUE\n</parameter>\n per property, in the
// schema's order (required ones always, optional ones may be left out). A string value is raw text (no
// "</"); any other value is JSON under the property's schema (the parser json.loads it).
ApiResult<std::string> XmlParameters(const ToolSpec& t, size_t index, grammar::JsonSchemaOptions::Whitespace ws,
                                     std::string* rules) {
  const Json& schema = t.parameters;
  std::string out;
  if (schema.is_null() || !schema.contains("properties")) return std::string("\"\"");
  if (!schema["properties"].is_object())
    return ApiError::BadRequest(fmt::format("Tool '{}' parameters: properties must be an object", t.name));
  std::vector<std::string> required;
  if (schema.contains("required") && schema["required"].is_array())
    for (const Json& r : schema["required"])
      if (r.is_string()) required.push_back(r.get<std::string>());
  size_t k = 0;
  for (const auto& [key, prop] : schema["properties"].items()) {
    std::string value;
    bool string_enum = prop.is_object() && prop.contains("enum") && prop["enum"].is_array() && !prop["enum"].empty();
    if (string_enum)
      for (const Json& e : prop["enum"]) string_enum = string_enum && e.is_string();
    if (string_enum) {  // raw text, as the parser keeps a string value
      for (const Json& e : prop["enum"]) value += (value.empty() ? "(" : " | ") + grammar::EbnfQuote(e.get<std::string>());
      value += ")";
    } else if (prop.is_object() && prop.value("type", Json()) == "string") {
      value = "([^<] | \"<\" [^/])*";
    } else {
      const std::string prefix = fmt::format("tool{}_p{}_", index, k);
      auto ebnf = grammar::JsonSchemaToEbnf(prop, {.whitespace = ws}, prefix);
      if (!ebnf.ok())
        return ApiError::BadRequest(fmt::format("Tool '{}' parameter '{}' cannot constrain the call: {}", t.name, key,
                                                ebnf.status().message()));
      *rules += *ebnf;
      value = prefix + "root";
    }
    const std::string item = grammar::EbnfQuote("<parameter=" + key + ">\n") + " " + value + " " +
                             grammar::EbnfQuote("\n</parameter>\n");
    const bool req_key = std::find(required.begin(), required.end(), key) != required.end();
    out += (out.empty() ? "" : " ") + (req_key ? item : "(" + item + ")?");
    ++k;
  }
  return out.empty() ? std::string("\"\"") : out;
}

ApiResult<std::optional<ConstraintRequest>> XmlToolConstraint(const ChatRequest& req,
                                                              grammar::JsonSchemaOptions::Whitespace ws) {
  const bool named = req.tool_choice.mode == ToolChoiceMode::kFunction;
  std::string rules, call;
  for (size_t i = 0; i < req.tools.size(); ++i) {
    const ToolSpec& t = req.tools[i];
    if (named && t.name != req.tool_choice.function_name) continue;
    auto params = XmlParameters(t, i, ws, &rules);
    if (!params.ok()) return params.error();
    const std::string body = *params + " " + grammar::EbnfQuote("</function>\n</tool_call>");
    call += (call.empty() ? "" : " | ") + (named ? "(" + body + ")" : "(" + grammar::EbnfQuote(t.name + ">\n") + " " + body + ")");
  }
  std::string root = "root ::= (" + call + ")";
  if (!named && req.parallel_tool_calls) root += " (" + grammar::EbnfQuote("\n<tool_call>\n<function=") + " (" + call + "))*";
  return std::optional<ConstraintRequest>(
      ConstraintRequest{.kind = ConstraintRequest::Kind::kEbnf, .text = root + "\n" + rules});
}

}  // namespace

ApiResult<std::optional<ConstraintRequest>> ChatConstraint(const ChatRequest& req, const ServerParsers& server,
                                                           const ForcedToolCall& forced) {
  if (forced.reply_prefix.empty() || !server.tool_call) return req.sampling.constraint;
  const auto ws = server.any_json_whitespace ? grammar::JsonSchemaOptions::Whitespace::kAny
                                             : grammar::JsonSchemaOptions::Whitespace::kSpaced;
  if (*server.tool_call == ToolParserKind::kQwen3Coder) return XmlToolConstraint(req, ws);
  const bool named = req.tool_choice.mode == ToolChoiceMode::kFunction;
  std::string rules;
  std::vector<std::string> calls;  // per tool: what follows `{"name": "` up to the end of the call
  for (size_t i = 0; i < req.tools.size(); ++i) {
    const ToolSpec& t = req.tools[i];
    if (named && t.name != req.tool_choice.function_name) continue;
    const Json schema = t.parameters.is_null() ? Json{{"type", "object"}} : t.parameters;
    auto ebnf = grammar::JsonSchemaToEbnf(schema, {.whitespace = ws},
                                          fmt::format("tool{}_", i));
    if (!ebnf.ok())
      return ApiError::BadRequest(fmt::format("Tool '{}' parameters cannot constrain the call: {}", t.name,
                                              ebnf.status().message()));
    rules += *ebnf;
    const std::string args = fmt::format("tool{}_root \"}}\\n</tool_call>\"", i);
    calls.push_back(named ? args
                          : grammar::EbnfQuote(QuotedBody(t.name) + "\", \"arguments\": ") + " " + args);
  }
  std::string call;
  for (size_t i = 0; i < calls.size(); ++i) call += (i ? " | " : "") + calls[i];
  std::string root = "root ::= (" + call + ")";
  if (!named && req.parallel_tool_calls)
    root += " (" + grammar::EbnfQuote("\n<tool_call>\n{\"name\": \"") + " (" + call + "))*";
  return std::optional<ConstraintRequest>(
      ConstraintRequest{.kind = ConstraintRequest::Kind::kEbnf, .text = root + "\n" + rules});
}

bool ConstraintAfterReasoning(const ChatParseConfig& config, const ChatRequest& request) {
  if (!config.reasoning || !config.reasoning->separate_reasoning) return false;
  if (config.reasoning->force_reasoning) return true;
  // SGLang's require_reasoning for qwen3-style parsers: the reply reasons unless thinking was turned off.
  const auto it = request.chat_template_kwargs.find("enable_thinking");
  return !(it != request.chat_template_kwargs.end() && it->is_boolean() && !it->get<bool>());
}

}  // namespace tern::api
