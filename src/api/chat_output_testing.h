// For tests and fuzz targets: a reply pushed through ChatOutputParser in the
// given pieces, summarized as one string (reasoning, content, and each
// accumulated tool call's id, name and arguments), so that two ways of
// streaming the same reply can be compared.
#pragma once

#include <string>
#include <utility>

#include "api/chat_output.h"

namespace tern::api {

// pieces: a range of std::string or std::string_view. Tool-call ids are
// "id0", "id1", ... so that summaries compare equal.
template <class Pieces>
std::string SummarizeChatOutput(const ChatParseConfig& config, const Pieces& pieces) {
  int n = 0;
  ChatOutputParser parser(config, [&n] { return "id" + std::to_string(n++); });
  std::string reasoning, content;
  ToolParseDelta calls;
  auto take = [&](ChatDelta d) {
    reasoning += d.reasoning;
    content += d.content;
    for (auto& c : d.tool_calls) calls.calls.push_back(std::move(c));
  };
  for (const auto& p : pieces) take(parser.Push(p));
  take(parser.Finish());
  ToolCallAccumulator acc;
  acc.Add(calls);
  std::string out = "R[" + reasoning + "]C[" + content + "]";
  for (const auto& c : acc.result().calls) out += "T[" + c.id + "|" + c.name + "|" + c.arguments + "]";
  return out;
}

}  // namespace tern::api
