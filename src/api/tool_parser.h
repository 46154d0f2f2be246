// Tool-call parsers (SGLang's --tool-call-parser): find tool calls in the
// content text of a reply and turn them into OpenAI tool calls.
//
//   qwen25 / qwen / hermes   <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>
//   qwen3_coder              <tool_call>\n<function=f>\n<parameter=k>\nv\n</parameter>\n
//                            </function>\n</tool_call>
//
// The parser runs on content, after the reasoning parser. Text outside calls
// (before, between, after) stays content verbatim; stray "</tool_call>" tags
// are dropped from content (SGLang). Tool-call ids are "call_" + 24 hex
// digits. Arguments are the JSON text SGLang builds with json.dumps(...,
// ensure_ascii=False): {"k": v, "k2": v2}.
//
// JSON format (qwen25, hermes):
//   - a call is emitted once its object has a "name" that names one of the
//     request's tools and its "arguments" (or "parameters") value has begun;
//     the arguments then stream as they arrive, re-serialized canonically;
//     a call without arguments gets "{}";
//   - unparseable blocks stay in content verbatim, tags included: the body is
//     not a JSON object, the name is missing or not one of the tools (SGLang
//     drops such calls), or the JSON breaks before the call was emitted;
//   - if the JSON breaks after the call was emitted, the call keeps the
//     arguments sent so far and the rest of the block is dropped;
//   - text after the JSON object and before </tool_call> is dropped (Qwen
//     models sometimes close with an extra "}"), and a new <tool_call> there
//     starts the next call (a missing </tool_call> is tolerated).
// XML format (qwen3_coder), as SGLang's Qwen3CoderDetector:
//   - a call is emitted at "<function=NAME>" (any name, as SGLang); a
//     <function=...> without a <tool_call> wrapper is a call too;
//   - one leading and one trailing "\n" of each value are dropped; a value
//     also ends at the next "<parameter=", at "</function>" or
//     "</tool_call>"; values are converted by the tool's JSON schema
//     (ConvertXmlParameter); string-typed values stream as they arrive (SGLang
//     waits for </parameter>, its issue #27005), others are sent when
//     complete;
//   - a <tool_call> block with no <function=...> stays in content verbatim.
// Streaming: Push() takes any split of the text and never emits a partial
// tag. Concatenating the deltas of Push...Finish gives the same content and
// calls as ParseToolCalls on the whole text, whatever the split.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/requests.h"

namespace tern::api {

enum class ToolParserKind { kQwen25, kHermes, kQwen3Coder };

// "qwen25", "qwen", "hermes", "qwen3_coder"; nullopt for other names.
std::optional<ToolParserKind> ToolParserFromName(std::string_view name);

// One OpenAI tool-call delta: the first one of a call carries the id and
// the function name; every one carries the next piece of the arguments
// (possibly empty on the first).
struct ToolCallDelta {
  int index = 0;  // position of the call in the reply: 0, 1, ...
  std::string id;
  std::string name;
  std::string arguments;
};

struct ToolParseDelta {
  std::string content;               // content text of this piece
  std::vector<ToolCallDelta> calls;  // calls' pieces, after the content
  bool empty() const { return content.empty() && calls.empty(); }
};

struct ToolCall {
  std::string id;
  std::string name;
  std::string arguments;  // JSON text
};

struct ToolParseResult {
  std::string content;
  std::vector<ToolCall> calls;
};

// Makes ids for new calls; the default gives "call_" + 24 random hex digits.
using ToolCallIdGenerator = std::function<std::string()>;
std::string RandomToolCallId();

class ToolCallParser {
 public:
  virtual ~ToolCallParser() = default;
  virtual ToolParseDelta Push(std::string_view text) = 0;
  // End of output: releases held-back text and closes an open call.
  virtual ToolParseDelta Finish() = 0;
  // True once at least one call was emitted (finish_reason "tool_calls").
  virtual bool has_calls() const = 0;

  static std::unique_ptr<ToolCallParser> Create(ToolParserKind kind, std::vector<ToolSpec> tools,
                                                ToolCallIdGenerator ids = RandomToolCallId);
};

// Folds deltas into whole calls.
class ToolCallAccumulator {
 public:
  void Add(const ToolParseDelta& delta);
  const ToolParseResult& result() const { return result_; }
  ToolParseResult&& Take() { return std::move(result_); }

 private:
  ToolParseResult result_;
};

// Whole-text parse (Push(text) + Finish()).
ToolParseResult ParseToolCalls(ToolParserKind kind, const std::vector<ToolSpec>& tools,
                               std::string_view text, ToolCallIdGenerator ids = RandomToolCallId);

// qwen3_coder value conversion (SGLang/vLLM _convert_param_value), by the
// type of `name` in `param_config` (the tool's parameters.properties, or
// the parameters object itself when it has no "properties"):
//   value "null" (any case)               -> null
//   name not in param_config, no "type",
//   string/str/text/varchar/char/enum     -> the string
//   int*/uint*/long*/short*/unsigned*     -> Python int(value), else the string
//   num*/float*                           -> float(value); an integral value
//                                            written without "." or "e" stays
//                                            an int; else the string
//   boolean/bool/binary                   -> value.lower() == "true"
//   object/array/arr/dict*/list*          -> json.loads, then Python literal
//                                            (ast.literal_eval), else string
//   any other type                        -> Python literal, else string
// Infinity/NaN results are kept as strings so the arguments stay valid JSON.
// Returns the json.dumps text of the result.
std::string ConvertXmlParameter(std::string_view value, std::string_view name, const Json& param_config);
// True when ConvertXmlParameter keeps every value but "null" a string.
bool IsStringXmlParameter(std::string_view name, const Json& param_config);
// The param_config of function `name` among `tools` ({} if unknown).
Json XmlParamConfig(const std::vector<ToolSpec>& tools, std::string_view name);

}  // namespace tern::api
