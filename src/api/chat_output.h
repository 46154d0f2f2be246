// ChatOutputParser: the per-choice pipeline a chat completion runs its
// output text through, as SGLang's serving_chat does: the reasoning parser
// first (when --reasoning-parser is set and separate_reasoning is true),
// then the tool-call parser on the content it leaves (when
// --tool-call-parser is set, the request has tools and tool_choice is not
// "none").
//
// Streaming use (one parser per choice):
//   ChatStreamEncoder enc(meta);  send(enc.Role(i));
//   for each detokenized text piece: d = parser.Push(piece); send chunks of d
//   d = parser.Finish(); send chunks of d; send(enc.Finish(i, finish));
// EncodeChatDelta turns a delta into those chunks. The non-stream reply is
// ParseChatOutput on the whole text.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/reasoning_parser.h"
#include "api/requests.h"
#include "api/responses.h"
#include "api/tool_parser.h"

namespace tern::api {

// The server's parser flags (--reasoning-parser, --tool-call-parser).
struct ServerParsers {
  std::optional<ReasoningParserKind> reasoning;
  std::optional<ToolParserKind> tool_call;
  // --json-whitespace any: forced tool calls' JSON arguments allow any white
  // space too (else json.dumps' ", " / ": ", as the templates show calls).
  bool any_json_whitespace = false;
};

struct ChatParseConfig {
  std::optional<ReasoningConfig> reasoning;  // nullopt: no reasoning parsing
  std::optional<ToolParserKind> tool_parser;  // nullopt: no tool parsing
  std::vector<ToolSpec> tools;
  bool include_reasoning = true;  // false (vLLM field): reasoning is dropped
};

// Derives the config from the request, the server flags and the rendered
// prompt (for ResolveForceReasoning):
//   reasoning: only with separate_reasoning (otherwise the raw text, tags
//     included, is content, as in SGLang); stream_reasoning and
//     chat_template_kwargs.force_nonempty_content carried over;
//   tools: only when tool_choice is not "none" and tools are given; all the
//     request's tools are known to the parser.
ChatParseConfig MakeChatParseConfig(const ChatRequest& request, const ServerParsers& server,
                                    std::string_view rendered_prompt);

// tool_choice "required" or a named function without a grammar engine: the
// text appended to the rendered prompt so the assistant's output starts
// inside a call of the active tool-call parser's format, as SGLang's
// structural tag for that parser would force it. Two parts:
//   prompt_suffix: when the prompt leaves the model inside reasoning (it ends
//     with "<think>", Qwen3.5 / Qwen3-Thinking), "\n</think>\n\n" closes the
//     block as the templates render thinking turned off, so the model skips
//     thinking. It belongs to the prompt: the reply has no reasoning.
//   reply_prefix: the start of the call, which is also the start of the reply:
//     qwen25/hermes, named f:  <tool_call>\n{"name": "f", "arguments": 
//     qwen25/hermes, required: <tool_call>\n{"name": "
//     qwen3_coder, named f:    <tool_call>\n<function=f>\n
//     qwen3_coder, required:   <tool_call>\n<function=
// The caller generates from rendered + prompt_suffix + reply_prefix, derives
// the parse config from rendered + prompt_suffix, and pushes reply_prefix
// through the ChatOutputParser before the generated text, so the reply
// carries the whole call. Both empty when nothing is forced: tool_choice
// "auto" or "none", no tools, no --tool-call-parser, or input_ids given.
// The tag strings the config's parsers consume: "<think>" and "</think>"
// with a reasoning parser; "<tool_call>" and "</tool_call>" with the qwen25,
// hermes and qwen3_coder tool parsers (qwen3_coder's <function=...> and
// <parameter=...> are never whole tokens). The server keeps a special token
// whose text is one of these in the text it parses even with
// skip_special_tokens; every other special token is dropped, and the parsers
// remove the tags they consume, so no tag reaches content or reasoning.
std::vector<std::string> ChatParserTags(const ChatParseConfig& config);

struct ForcedToolCall {
  std::string prompt_suffix;
  std::string reply_prefix;
};
ForcedToolCall ForceToolCall(const ChatRequest& request, const ServerParsers& server,
                             std::string_view rendered_prompt);

struct ChatDelta {
  std::string reasoning;
  std::string content;
  std::vector<ToolCallDelta> tool_calls;
  bool empty() const { return reasoning.empty() && content.empty() && tool_calls.empty(); }
};

class ChatOutputParser {
 public:
  explicit ChatOutputParser(const ChatParseConfig& config,
                            ToolCallIdGenerator ids = RandomToolCallId);
  ChatDelta Push(std::string_view text);
  ChatDelta Finish();
  // True once a tool call was emitted.
  bool has_tool_calls() const { return tools_ && tools_->has_calls(); }
  // True while the output is inside reasoning.
  bool in_reasoning() const { return reasoning_ && reasoning_->in_reasoning(); }

 private:
  void Route(ReasoningDelta r, ChatDelta* out);

  std::optional<ReasoningParser> reasoning_;
  std::unique_ptr<ToolCallParser> tools_;
  bool include_reasoning_;
};

// usage.reasoning_tokens of one choice, counted over the generated tokens as
// SGLang's scheduler counts them (Req.update_reasoning_tokens): each token up
// to and including the one that ends reasoning. "In reasoning" is decided by
// the reply's own reasoning parser fed one token's text at a time, so a token
// counts when any of its text lies inside the block (an unforced reply counts
// from its <think>; Qwen3's <tool_call> exit ends the count as it ends the
// reasoning). 0 without reasoning parsing. Stream and non-stream replies count
// alike, whatever the reasoning text re-encodes to.
class ReasoningTokenCounter {
 public:
  // reply_prefix: the start of the reply that was not generated
  // (ForcedToolCall::reply_prefix); it is parsed but not counted.
  ReasoningTokenCounter(const ChatParseConfig& config, std::string_view reply_prefix);
  void Add(std::string_view token_text);
  int64_t count() const { return count_; }

 private:
  std::optional<ReasoningParser> parser_;
  int64_t count_ = 0;
};

// The SSE chunks for one delta: reasoning, then content, then one chunk per
// tool-call piece. `usage` goes on each chunk (continuous_usage_stats).
std::string EncodeChatDelta(ChatStreamEncoder& encoder, int index, const ChatDelta& delta,
                            const Usage* usage = nullptr);

// Non-stream parse of a whole output. When tool calls were found the content
// has its surrounding whitespace trimmed (SGLang returns the text before the
// first call, stripped).
ChatChoice ParseChatOutput(const ChatParseConfig& config, std::string_view text,
                           FinishReason finish, ToolCallIdGenerator ids = RandomToolCallId);

}  // namespace tern::api
