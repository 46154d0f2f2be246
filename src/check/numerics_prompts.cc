#include "check/numerics_prompts.h"

#include <fmt/format.h>

#include <fstream>

#include "check/checks_common.h"

namespace tern::check {

std::vector<NumericsPrompt> BuiltInNumericsPrompts(int long_context_tokens) {
  using nlohmann::json;
  auto user = [](const std::string& text) { return UserMessage(text); };
  std::vector<NumericsPrompt> p;
  p.push_back({.name = "chat", .messages = user(prompts::kSentence)});
  p.push_back({.name = "thinking", .messages = user(prompts::kArithmeticThinking), .thinking = true});
  p.push_back({.name = "multi_turn",
               .messages = json::array({{{"role", "user"},
                                         {"content", fmt::format("Remember this code word: {}. Reply with just "
                                                                 "'Noted.'",
                                                                 prompts::kCodeWord)}},
                                        {{"role", "assistant"}, {"content", "Noted."}},
                                        {{"role", "user"}, {"content", "What was the code word? Reply with it only."}}})});
  p.push_back({.name = "code",
               .messages = user("Write a Python function fib(n) that returns the n-th Fibonacci number, with a "
                                "docstring.")});
  p.push_back({.name = "arithmetic", .messages = user(prompts::kArithmetic)});
  p.push_back({.name = "long_context", .messages = user(BuildLongContextPrompt(long_context_tokens))});
  return p;
}

Result<std::vector<NumericsPrompt>> LoadNumericsPrompts(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::Errorf("--prompts {}: cannot open the file", path);
  std::vector<NumericsPrompt> out;
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos || line[line.find_first_not_of(" \t")] == '#') continue;
    NumericsPrompt p;
    p.name = fmt::format("file-{}", lineno);
    if (line[line.find_first_not_of(" \t")] == '{') {
      nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (j.is_discarded() || !j.is_object()) return Status::Errorf("--prompts {}:{}: not a JSON object", path, lineno);
      if (j.contains("name") && j["name"].is_string()) p.name = j["name"].get<std::string>();
      if (j.contains("thinking") && j["thinking"].is_boolean()) p.thinking = j["thinking"].get<bool>();
      if (j.contains("messages")) {
        if (!j["messages"].is_array() || j["messages"].empty())
          return Status::Errorf("--prompts {}:{}: \"messages\" must be a non-empty array", path, lineno);
        p.messages = j["messages"];
      } else if (j.contains("prompt") && j["prompt"].is_string() && !j["prompt"].get<std::string>().empty()) {
        p.text = j["prompt"].get<std::string>();
      } else {
        return Status::Errorf("--prompts {}:{}: give \"messages\" (chat) or \"prompt\" (raw text)", path, lineno);
      }
    } else {
      p.messages = UserMessage(line);
    }
    out.push_back(std::move(p));
  }
  if (out.empty()) return Status::Errorf("--prompts {}: no prompts in the file", path);
  return out;
}

}  // namespace tern::check
