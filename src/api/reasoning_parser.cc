#include "api/reasoning_parser.h"

#include <cctype>

#include "api/tag_scan.h"

namespace tern::api {
namespace {

constexpr std::string_view kThinkOpen = "<think>";
constexpr std::string_view kThinkClose = "</think>";
constexpr std::string_view kToolStart = "<tool_call>";

}  // namespace

std::optional<ReasoningParserKind> ReasoningParserFromName(std::string_view name) {
  std::string n(name);
  for (char& c : n) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (n == "qwen3") return ReasoningParserKind::kQwen3;
  if (n == "qwen3-thinking") return ReasoningParserKind::kQwen3Thinking;
  if (n == "deepseek-r1") return ReasoningParserKind::kDeepSeekR1;
  return std::nullopt;
}

bool ResolveForceReasoning(ReasoningParserKind kind, bool prompt_opens_reasoning) {
  return kind != ReasoningParserKind::kQwen3 || prompt_opens_reasoning;
}

ReasoningParser::ReasoningParser(const ReasoningConfig& config)
    : config_(config), phase_(config.force_reasoning ? Phase::kStart : Phase::kBefore) {}

void ReasoningParser::EmitReasoning(std::string_view text, ReasoningDelta* out) {
  if (text.empty()) return;
  if (config_.force_nonempty_content) all_reasoning_.append(text);
  if (config_.stream_reasoning) out->reasoning.append(text);
  else held_reasoning_.append(text);
}

void ReasoningParser::LeaveReasoning(ReasoningDelta* out) {
  out->reasoning += held_reasoning_;
  held_reasoning_.clear();
  phase_ = Phase::kAfter;
}

ReasoningDelta ReasoningParser::Push(std::string_view text) {
  ReasoningDelta out;
  if (!config_.separate_reasoning) {
    out.content.assign(text);
    any_content_ = any_content_ || !text.empty();
    return out;
  }
  const std::string buf = pending_ + std::string(text);
  pending_.clear();
  const std::string_view s(buf);
  const bool qwen = config_.kind != ReasoningParserKind::kDeepSeekR1;
  size_t i = 0;
  while (i < s.size()) {
    const std::string_view rest = s.substr(i);
    if (phase_ == Phase::kBefore) {
      const size_t j = rest.find(kThinkOpen);
      if (j == std::string_view::npos) {
        const size_t hold = PartialTagSuffix(rest, {kThinkOpen});
        out.content.append(rest.substr(0, rest.size() - hold));
        pending_.assign(rest.substr(rest.size() - hold));
        break;
      }
      out.content.append(rest.substr(0, j));
      i += j + kThinkOpen.size();
      phase_ = Phase::kStart;
    } else if (phase_ == Phase::kStart) {
      if (rest.substr(0, kThinkOpen.size()) == kThinkOpen) {
        i += kThinkOpen.size();
      } else if (kThinkOpen.substr(0, rest.size()) == rest) {
        pending_.assign(rest);  // could still be a repeated <think>
        break;
      } else {
        phase_ = Phase::kReasoning;
      }
    } else if (phase_ == Phase::kReasoning) {
      size_t which = 0;
      const size_t j = qwen ? FindFirstTag(rest, 0, {kThinkClose, kToolStart}, &which)
                            : FindFirstTag(rest, 0, {kThinkClose}, &which);
      if (j == std::string_view::npos) {
        const size_t hold = qwen ? PartialTagSuffix(rest, {kThinkClose, kToolStart})
                                 : PartialTagSuffix(rest, {kThinkClose});
        EmitReasoning(rest.substr(0, rest.size() - hold), &out);
        pending_.assign(rest.substr(rest.size() - hold));
        break;
      }
      EmitReasoning(rest.substr(0, j), &out);
      LeaveReasoning(&out);
      // </think> is consumed; <tool_call> stays for the content.
      i += j + (which == 0 ? kThinkClose.size() : 0);
    } else {  // kAfter
      out.content.append(rest);
      break;
    }
  }
  any_content_ = any_content_ || !out.content.empty();
  return out;
}

ReasoningDelta ReasoningParser::Finish() {
  ReasoningDelta out;
  if (!config_.separate_reasoning) return out;
  if (phase_ == Phase::kBefore) {
    out.content = std::move(pending_);
  } else if (phase_ == Phase::kStart || phase_ == Phase::kReasoning) {
    EmitReasoning(pending_, &out);
    LeaveReasoning(&out);
  }
  pending_.clear();
  out.reasoning += held_reasoning_;
  held_reasoning_.clear();
  any_content_ = any_content_ || !out.content.empty();
  if (config_.force_nonempty_content && !any_content_ && !all_reasoning_.empty()) {
    out.content += all_reasoning_;
    any_content_ = true;
  }
  return out;
}

ReasoningDelta ParseReasoning(const ReasoningConfig& config, std::string_view text) {
  ReasoningParser parser(config);
  ReasoningDelta out = parser.Push(text);
  ReasoningDelta tail = parser.Finish();
  out.reasoning += tail.reasoning;
  out.content += tail.content;
  return out;
}

}  // namespace tern::api
