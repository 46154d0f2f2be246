// Reasoning parsers: whole-text results (expected values written by hand from
// SGLang's documented semantics) and the same results for every way of
// splitting the text into streamed pieces.
#include <gtest/gtest.h>

#include "api/reasoning_parser.h"

namespace tern::api {
namespace {

ReasoningConfig Config(ReasoningParserKind kind, bool force) {
  ReasoningConfig c;
  c.kind = kind;
  c.force_reasoning = force;
  return c;
}

struct Split {
  std::string reasoning, content;
  std::vector<ReasoningDelta> deltas;
};

Split Feed(const ReasoningConfig& config, const std::vector<std::string_view>& pieces) {
  ReasoningParser p(config);
  Split s;
  for (auto piece : pieces) s.deltas.push_back(p.Push(piece));
  s.deltas.push_back(p.Finish());
  for (const auto& d : s.deltas) {
    s.reasoning += d.reasoning;
    s.content += d.content;
  }
  return s;
}

// Every split of `text` into 1, 2 and 3 pieces, and byte by byte, gives
// `reasoning` / `content`.
void ExpectAllSplits(const ReasoningConfig& config, std::string_view text, std::string_view reasoning,
                     std::string_view content) {
  const ReasoningDelta whole = ParseReasoning(config, text);
  EXPECT_EQ(whole.reasoning, reasoning) << "whole: " << text;
  EXPECT_EQ(whole.content, content) << "whole: " << text;
  const size_t n = text.size();
  for (size_t a = 0; a <= n; ++a) {
    const Split s = Feed(config, {text.substr(0, a), text.substr(a)});
    ASSERT_EQ(s.reasoning, reasoning) << "split at " << a << ": " << text;
    ASSERT_EQ(s.content, content) << "split at " << a << ": " << text;
    if (n > 40) continue;
    for (size_t b = a; b <= n; ++b) {
      const Split t = Feed(config, {text.substr(0, a), text.substr(a, b - a), text.substr(b)});
      ASSERT_EQ(t.reasoning, reasoning) << "splits " << a << "," << b << ": " << text;
      ASSERT_EQ(t.content, content) << "splits " << a << "," << b << ": " << text;
    }
  }
  std::vector<std::string_view> bytes;
  for (size_t i = 0; i < n; ++i) bytes.push_back(text.substr(i, 1));
  const Split s = Feed(config, bytes);
  EXPECT_EQ(s.reasoning, reasoning) << "bytes: " << text;
  EXPECT_EQ(s.content, content) << "bytes: " << text;
}

TEST(ReasoningParser, Names) {
  EXPECT_EQ(ReasoningParserFromName("qwen3"), ReasoningParserKind::kQwen3);
  EXPECT_EQ(ReasoningParserFromName("Qwen3-Thinking"), ReasoningParserKind::kQwen3Thinking);
  EXPECT_EQ(ReasoningParserFromName("deepseek-r1"), ReasoningParserKind::kDeepSeekR1);
  EXPECT_FALSE(ReasoningParserFromName("kimi"));
  EXPECT_FALSE(ResolveForceReasoning(ReasoningParserKind::kQwen3, false));
  EXPECT_TRUE(ResolveForceReasoning(ReasoningParserKind::kQwen3, true));
  EXPECT_TRUE(ResolveForceReasoning(ReasoningParserKind::kQwen3Thinking, false));
  EXPECT_TRUE(ResolveForceReasoning(ReasoningParserKind::kDeepSeekR1, false));
}

// Qwen3 hybrid, thinking on: the model opens <think> itself.
TEST(ReasoningParser, Qwen3OpensThinkItself) {
  ExpectAllSplits(Config(ReasoningParserKind::kQwen3, false),
                  "<think>\nThe user asks 2+2. That is 4.\n</think>\n\nThe answer is **4**.",
                  "\nThe user asks 2+2. That is 4.\n", "\n\nThe answer is **4**.");
}

// Qwen3.5 / Qwen3-Thinking: the prompt ends with "<think>\n".
TEST(ReasoningParser, ForcedByPrompt) {
  ExpectAllSplits(Config(ReasoningParserKind::kQwen3, true),
                  "Okay, 2+2 is 4.\n</think>\n\nIt is 4.", "Okay, 2+2 is 4.\n", "\n\nIt is 4.");
  // A model that echoes the opening tag anyway: dropped, repeated ones too.
  ExpectAllSplits(Config(ReasoningParserKind::kQwen3, true), "<think><think>x</think>y", "x", "y");
}

TEST(ReasoningParser, DeepSeekR1) {
  const auto r1 = Config(ReasoningParserKind::kDeepSeekR1, true);
  ExpectAllSplits(r1, "Hmm, let me see.\n</think>\n\nDone.", "Hmm, let me see.\n", "\n\nDone.");
  ExpectAllSplits(r1, "<think>\nHmm\n</think>\n\nX", "\nHmm\n", "\n\nX");
  // R1 has no tool-call exit: <tool_call> stays reasoning.
  ExpectAllSplits(r1, "a<tool_call>b</think>c", "a<tool_call>b", "c");
}

// Qwen3.5 may open a tool call without closing </think>.
TEST(ReasoningParser, ToolCallEndsQwenReasoning) {
  ExpectAllSplits(Config(ReasoningParserKind::kQwen3, true),
                  "I should look it up.\n<tool_call>\n<function=get_weather>\n</function>\n</tool_call>",
                  "I should look it up.\n", "<tool_call>\n<function=get_weather>\n</function>\n</tool_call>");
  // Content after </think> keeps its tags verbatim.
  ExpectAllSplits(Config(ReasoningParserKind::kQwen3, true), "r</think>c<think>d</think>e", "r",
                  "c<think>d</think>e");
}

TEST(ReasoningParser, TruncatedThinkingIsAllReasoning) {
  ExpectAllSplits(Config(ReasoningParserKind::kQwen3, true), "still thinking about </thi", "still thinking about </thi",
                  "");
  ExpectAllSplits(Config(ReasoningParserKind::kQwen3, false), "<think>half a thought", "half a thought", "");
  ExpectAllSplits(Config(ReasoningParserKind::kQwen3, true), "<thi", "<thi", "");
}

// enable_thinking=false: the prompt closed the block; no tags in the output.
TEST(ReasoningParser, NotForcedPlainOutputIsContent) {
  const auto q = Config(ReasoningParserKind::kQwen3, false);
  ExpectAllSplits(q, "Hello! How can I help?", "", "Hello! How can I help?");
  ExpectAllSplits(q, "a</think>b", "", "a</think>b");  // no opening tag: plain text
  ExpectAllSplits(q, "<thinking> is not a tag", "", "<thinking> is not a tag");
  ExpectAllSplits(q, "x <thin", "", "x <thin");
  // Text before a late <think> stays content; the tag opens reasoning.
  ExpectAllSplits(q, "pre<think>mid</think>post", "mid", "prepost");
  ExpectAllSplits(q, "", "", "");
}

TEST(ReasoningParser, PartialTagsAreHeldBack) {
  ReasoningParser p(Config(ReasoningParserKind::kQwen3, true));
  ReasoningDelta d = p.Push("thinking</th");
  EXPECT_EQ(d.reasoning, "thinking");
  EXPECT_EQ(d.content, "");
  d = p.Push("ink>\n\nok");
  EXPECT_EQ(d.reasoning, "");
  EXPECT_EQ(d.content, "\n\nok");
  EXPECT_FALSE(p.in_reasoning());

  ReasoningParser q(Config(ReasoningParserKind::kQwen3, false));
  d = q.Push("<thi");
  EXPECT_TRUE(d.empty());
  d = q.Push("nk>abc<tool_");
  EXPECT_EQ(d.reasoning, "abc");
  EXPECT_TRUE(q.in_reasoning());
  d = q.Push("call>{}");
  EXPECT_EQ(d.reasoning, "");
  EXPECT_EQ(d.content, "<tool_call>{}");
}

TEST(ReasoningParser, StreamReasoningFalseHoldsUntilTheEnd) {
  auto c = Config(ReasoningParserKind::kQwen3, true);
  c.stream_reasoning = false;
  ReasoningParser p(c);
  EXPECT_TRUE(p.Push("abc").empty());
  EXPECT_TRUE(p.Push("def").empty());
  ReasoningDelta d = p.Push("</think>xyz");
  EXPECT_EQ(d.reasoning, "abcdef");
  EXPECT_EQ(d.content, "xyz");
  ExpectAllSplits(c, "abc</think>xyz", "abc", "xyz");
  // Cut off while thinking: Finish releases it.
  ReasoningParser t(c);
  EXPECT_TRUE(t.Push("partial").empty());
  EXPECT_EQ(t.Finish().reasoning, "partial");
}

TEST(ReasoningParser, SeparateReasoningFalseKeepsEverythingAsContent) {
  auto c = Config(ReasoningParserKind::kQwen3, true);
  c.separate_reasoning = false;
  ExpectAllSplits(c, "<think>a</think>b", "", "<think>a</think>b");
}

TEST(ReasoningParser, ForceNonemptyContent) {
  auto c = Config(ReasoningParserKind::kQwen3, true);
  c.force_nonempty_content = true;
  // Never left reasoning: the reasoning is also sent as content at the end.
  const ReasoningDelta d = ParseReasoning(c, "only thoughts");
  EXPECT_EQ(d.reasoning, "only thoughts");
  EXPECT_EQ(d.content, "only thoughts");
  // With real content nothing changes.
  const ReasoningDelta e = ParseReasoning(c, "t</think>answer");
  EXPECT_EQ(e.reasoning, "t");
  EXPECT_EQ(e.content, "answer");
}

TEST(ReasoningParser, Utf8PassesThrough) {
  ExpectAllSplits(Config(ReasoningParserKind::kQwen3, true), "思考中…</think>答案：４", "思考中…", "答案：４");
}

}  // namespace
}  // namespace tern::api
