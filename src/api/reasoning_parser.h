// Reasoning parsers (SGLang's --reasoning-parser qwen3 / qwen3-thinking /
// deepseek-r1): split model output into `reasoning_content` and `content`.
//
// Grammar of the output (tags are plain text, e.g. Qwen3's <think> and
// </think> are added tokens that decode to these strings):
//
//   [content] <think> {<think>} reasoning </think> content     (not forced)
//   {<think>} reasoning </think> content                       (forced)
//
// - force_reasoning: the output starts inside reasoning because the prompt
//   opened <think> (DeepSeek-R1 always, Qwen3.5/Qwen3-Thinking templates).
// - Without force, text before the first <think> is content, and the first
//   <think> opens reasoning. Leading <think>s of the reasoning are dropped.
// - Reasoning ends at the first </think>; for the qwen3 parsers also at
//   <tool_call> (Qwen3.5 may call a tool without closing </think>), and the
//   <tool_call> text then belongs to content for the tool parser.
// - Output that ends inside reasoning is all reasoning (truncated thinking).
// - After reasoning ends everything is content, tags included, verbatim:
//   no whitespace is trimmed (SGLang's current parser; "\n\n" after </think>
//   stays at the start of content).
//
// Streaming: Push() takes any split of the text and never emits part of a
// tag: a suffix that could still become "<think>", "</think>" or
// "<tool_call>" is held back until the next piece decides it. The
// concatenation of all deltas (Push... then Finish) equals ParseReasoning on
// the whole text, whatever the split. This is SGLang's semantics made
// independent of chunking: SGLang's own detector only holds a buffer that is
// entirely a tag prefix, so a tag split after other text leaks; and its
// non-stream mode treats a <think> in the middle of text as making the whole
// text reasoning.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace tern::api {

enum class ReasoningParserKind {
  kQwen3,          // "qwen3": forced only when the prompt opened <think>
  kQwen3Thinking,  // "qwen3-thinking": always forced
  kDeepSeekR1,     // "deepseek-r1": always forced, no <tool_call> exit
};

// "qwen3", "qwen3-thinking", "deepseek-r1" (case-insensitive); nullopt for
// other names.
std::optional<ReasoningParserKind> ReasoningParserFromName(std::string_view name);

// Whether the output starts inside reasoning. SGLang forces qwen3-style
// parsers when its template heuristics say the template opens <think> or
// enable_thinking is not false; tern decides from the rendered prompt itself
// (PromptOpensReasoning in api/chat_template_inputs.h), which agrees for
// templates that open <think> and avoids SGLang's known failure of putting a
// whole non-thinking reply into reasoning_content.
bool ResolveForceReasoning(ReasoningParserKind kind, bool prompt_opens_reasoning);

struct ReasoningConfig {
  ReasoningParserKind kind = ReasoningParserKind::kQwen3;
  bool force_reasoning = false;
  // false: reasoning is held back and sent in one piece when it ends
  // (request field stream_reasoning).
  bool stream_reasoning = true;
  // false: no parsing at all, everything is content (separate_reasoning).
  bool separate_reasoning = true;
  // chat_template_kwargs.force_nonempty_content: when the whole output
  // produced no content, the reasoning is also sent as content at the end.
  bool force_nonempty_content = false;
};

struct ReasoningDelta {
  std::string reasoning;
  std::string content;
  bool empty() const { return reasoning.empty() && content.empty(); }
};

class ReasoningParser {
 public:
  explicit ReasoningParser(const ReasoningConfig& config);

  // Feeds the next piece of output text.
  ReasoningDelta Push(std::string_view text);
  // End of output: releases held-back text.
  ReasoningDelta Finish();

  // True while the parser is inside reasoning.
  bool in_reasoning() const { return phase_ == Phase::kStart || phase_ == Phase::kReasoning; }

 private:
  enum class Phase { kBefore, kStart, kReasoning, kAfter };
  void EmitReasoning(std::string_view text, ReasoningDelta* out);
  void LeaveReasoning(ReasoningDelta* out);

  ReasoningConfig config_;
  Phase phase_;
  std::string pending_;         // a held-back partial tag
  std::string held_reasoning_;  // stream_reasoning=false
  std::string all_reasoning_;   // force_nonempty_content
  bool any_content_ = false;
};

// Whole-text parse: Push(text) then Finish(), concatenated.
ReasoningDelta ParseReasoning(const ReasoningConfig& config, std::string_view text);

}  // namespace tern::api
