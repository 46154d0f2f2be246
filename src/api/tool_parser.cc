#include "api/tool_parser.h"

#include <cctype>
#include <random>

#include "api/tool_parser_impl.h"

namespace tern::api {
namespace {

// With no tools SGLang's FunctionCallParser returns the text untouched.
class PassthroughToolParser final : public ToolCallParser {
 public:
  ToolParseDelta Push(std::string_view text) override {
    ToolParseDelta d;
    d.content.assign(text);
    return d;
  }
  ToolParseDelta Finish() override { return {}; }
  bool has_calls() const override { return false; }
};

}  // namespace

std::optional<ToolParserKind> ToolParserFromName(std::string_view name) {
  if (name == "qwen25" || name == "qwen") return ToolParserKind::kQwen25;
  if (name == "hermes") return ToolParserKind::kHermes;
  if (name == "qwen3_coder") return ToolParserKind::kQwen3Coder;
  return std::nullopt;
}

std::string RandomToolCallId() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id = "call_";
  uint64_t bits = rng();
  for (int i = 0; i < 24; ++i) {
    if (i == 16) bits = rng();
    id.push_back(kHex[bits & 15]);
    bits >>= 4;
  }
  return id;
}

std::unique_ptr<ToolCallParser> ToolCallParser::Create(ToolParserKind kind, std::vector<ToolSpec> tools,
                                                       ToolCallIdGenerator ids) {
  if (tools.empty()) return std::make_unique<PassthroughToolParser>();
  if (kind == ToolParserKind::kQwen3Coder) return internal::MakeXmlToolParser(std::move(tools), std::move(ids));
  return internal::MakeJsonToolParser(std::move(tools), std::move(ids));
}

void ToolCallAccumulator::Add(const ToolParseDelta& delta) {
  result_.content += delta.content;
  for (const auto& d : delta.calls) {
    if (d.index >= static_cast<int>(result_.calls.size())) result_.calls.resize(d.index + 1);
    ToolCall& call = result_.calls[d.index];
    if (!d.id.empty()) call.id = d.id;
    if (!d.name.empty()) call.name = d.name;
    call.arguments += d.arguments;
  }
}

ToolParseResult ParseToolCalls(ToolParserKind kind, const std::vector<ToolSpec>& tools,
                               std::string_view text, ToolCallIdGenerator ids) {
  auto parser = ToolCallParser::Create(kind, tools, std::move(ids));
  ToolCallAccumulator acc;
  acc.Add(parser->Push(text));
  acc.Add(parser->Finish());
  return acc.Take();
}

}  // namespace tern::api
