// Internal: the concrete tool-call parsers behind ToolCallParser::Create.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "api/tool_parser.h"

namespace tern::api::internal {

constexpr std::string_view kToolCallOpen = "<tool_call>";
constexpr std::string_view kToolCallClose = "</tool_call>";

// qwen25 / hermes: JSON objects in <tool_call> blocks.
std::unique_ptr<ToolCallParser> MakeJsonToolParser(std::vector<ToolSpec> tools, ToolCallIdGenerator ids);
// qwen3_coder: XML function/parameter blocks.
std::unique_ptr<ToolCallParser> MakeXmlToolParser(std::vector<ToolSpec> tools, ToolCallIdGenerator ids);

// Appends the arguments text produced since the last flush of the current
// call to `out` as one delta (merging with that call's header delta when it
// is the last one).
inline void AppendArgs(ToolParseDelta* out, int index, std::string_view args) {
  if (args.empty()) return;
  if (!out->calls.empty() && out->calls.back().index == index) {
    out->calls.back().arguments.append(args);
    return;
  }
  ToolCallDelta d;
  d.index = index;
  d.arguments.assign(args);
  out->calls.push_back(std::move(d));
}

inline void AppendHeader(ToolParseDelta* out, int index, std::string id, std::string name) {
  ToolCallDelta d;
  d.index = index;
  d.id = std::move(id);
  d.name = std::move(name);
  out->calls.push_back(std::move(d));
}

}  // namespace tern::api::internal
