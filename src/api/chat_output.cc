#include "api/chat_output.h"

#include "api/chat_template_inputs.h"

namespace tern::api {

ChatParseConfig MakeChatParseConfig(const ChatRequest& req, const ServerParsers& server,
                                    std::string_view rendered_prompt) {
  ChatParseConfig c;
  if (server.reasoning && req.separate_reasoning) {
    ReasoningConfig r;
    r.kind = *server.reasoning;
    r.force_reasoning = ResolveForceReasoning(r.kind, PromptOpensReasoning(rendered_prompt));
    r.stream_reasoning = req.stream_reasoning;
    const auto it = req.chat_template_kwargs.find("force_nonempty_content");
    r.force_nonempty_content = it != req.chat_template_kwargs.end() && it->is_boolean() && it->get<bool>();
    c.reasoning = r;
  }
  if (server.tool_call && !req.tools.empty() && req.tool_choice.mode != ToolChoiceMode::kNone) {
    c.tool_parser = server.tool_call;
    c.tools = req.tools;
  }
  c.include_reasoning = req.include_reasoning;
  return c;
}

std::vector<std::string> ChatParserTags(const ChatParseConfig& config) {
  std::vector<std::string> tags;
  if (config.reasoning) tags = {"<think>", "</think>"};
  if (config.tool_parser) {
    switch (*config.tool_parser) {
      case ToolParserKind::kQwen25:
      case ToolParserKind::kHermes:
      case ToolParserKind::kQwen3Coder: tags.insert(tags.end(), {"<tool_call>", "</tool_call>"}); break;
    }
  }
  return tags;
}

ForcedToolCall ForceToolCall(const ChatRequest& req, const ServerParsers& server, std::string_view rendered_prompt) {
  const bool required = req.tool_choice.mode == ToolChoiceMode::kRequired;
  const bool named = req.tool_choice.mode == ToolChoiceMode::kFunction;
  if (!server.tool_call || req.tools.empty() || req.input_ids || !(required || named)) return {};
  ForcedToolCall f;
  if (PromptOpensReasoning(rendered_prompt)) f.prompt_suffix = "\n</think>\n\n";
  switch (*server.tool_call) {
    case ToolParserKind::kQwen25:
    case ToolParserKind::kHermes:
      // The name as json.dumps writes it inside the quotes (it is the tool's own name, checked at parsing).
      f.reply_prefix = "<tool_call>\n{\"name\": \"";
      if (named) {
        const std::string quoted = Json(req.tool_choice.function_name).dump();
        f.reply_prefix += quoted.substr(1, quoted.size() - 2) + "\", \"arguments\": ";
      }
      break;
    case ToolParserKind::kQwen3Coder:
      f.reply_prefix = "<tool_call>\n<function=";
      if (named) f.reply_prefix += req.tool_choice.function_name + ">\n";
      break;
  }
  return f;
}

ChatOutputParser::ChatOutputParser(const ChatParseConfig& config, ToolCallIdGenerator ids)
    : include_reasoning_(config.include_reasoning) {
  if (config.reasoning) reasoning_.emplace(*config.reasoning);
  if (config.tool_parser) tools_ = ToolCallParser::Create(*config.tool_parser, config.tools, std::move(ids));
}

void ChatOutputParser::Route(ReasoningDelta r, ChatDelta* out) {
  if (include_reasoning_) out->reasoning += r.reasoning;
  if (!tools_) {
    out->content += r.content;
    return;
  }
  ToolParseDelta t = tools_->Push(r.content);
  out->content += t.content;
  for (auto& c : t.calls) out->tool_calls.push_back(std::move(c));
}

ChatDelta ChatOutputParser::Push(std::string_view text) {
  ChatDelta out;
  if (reasoning_) {
    Route(reasoning_->Push(text), &out);
  } else {
    ReasoningDelta r;
    r.content.assign(text);
    Route(std::move(r), &out);
  }
  return out;
}

ChatDelta ChatOutputParser::Finish() {
  ChatDelta out;
  if (reasoning_) Route(reasoning_->Finish(), &out);
  if (tools_) {
    ToolParseDelta t = tools_->Finish();
    out.content += t.content;
    for (auto& c : t.calls) out.tool_calls.push_back(std::move(c));
  }
  return out;
}

ReasoningTokenCounter::ReasoningTokenCounter(const ChatParseConfig& config, std::string_view reply_prefix) {
  if (!config.reasoning) return;
  ReasoningConfig r = *config.reasoning;
  r.stream_reasoning = true;
  r.force_nonempty_content = false;
  parser_.emplace(r);
  parser_->Push(reply_prefix);
}

void ReasoningTokenCounter::Add(std::string_view token_text) {
  if (!parser_) return;
  const bool before = parser_->in_reasoning();
  parser_->Push(token_text);
  if (before || parser_->in_reasoning()) ++count_;
}

std::string EncodeChatDelta(ChatStreamEncoder& enc, int index, const ChatDelta& d, const Usage* usage) {
  std::string events;
  if (!d.reasoning.empty()) events += enc.Reasoning(index, d.reasoning, usage);
  if (!d.content.empty()) events += enc.Content(index, d.content, usage);
  for (const auto& call : d.tool_calls) events += enc.ToolCall(index, call, usage);
  return events;
}

ChatChoice ParseChatOutput(const ChatParseConfig& config, std::string_view text, FinishReason finish,
                           ToolCallIdGenerator ids) {
  ChatOutputParser parser(config, std::move(ids));
  ChatDelta a = parser.Push(text);
  ChatDelta b = parser.Finish();
  ChatChoice c;
  c.reasoning = a.reasoning + b.reasoning;
  c.content = a.content + b.content;
  ToolParseDelta calls;
  for (auto& t : a.tool_calls) calls.calls.push_back(std::move(t));
  for (auto& t : b.tool_calls) calls.calls.push_back(std::move(t));
  ToolCallAccumulator acc;
  acc.Add(calls);
  c.tool_calls = acc.Take().calls;
  if (!c.tool_calls.empty()) {
    const size_t b0 = c.content.find_first_not_of(" \t\r\n");
    const size_t e0 = c.content.find_last_not_of(" \t\r\n");
    c.content = b0 == std::string::npos ? "" : c.content.substr(b0, e0 - b0 + 1);
  }
  c.finish = std::move(finish);
  return c;
}

}  // namespace tern::api
