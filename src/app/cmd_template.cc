// `tern template`: prints the prompt a chat request renders to, for people
// debugging a deployment's template.
#include <fmt/format.h>

#include "app/commands.h"
#include "base/mapped_file.h"
#include "chat/chat_prompt.h"

namespace tern::app {

Command RegisterTemplate(CLI::App& app) {
  struct Opts { std::string model, messages, tools, kwargs, chat_template; bool no_generation_prompt = false; };
  auto o = std::make_shared<Opts>();
  app.add_option("--model", o->model, "model directory (tokenizer_config.json with a chat_template)")->required();
  app.add_option("--messages", o->messages, "JSON file with the messages array (or {\"messages\": [...]})")->required();
  app.add_option("--tools", o->tools, "JSON file with the tools array");
  app.add_flag("--no-generation-prompt", o->no_generation_prompt, "do not add the assistant generation prompt");
  app.add_option("--kwargs", o->kwargs, "JSON object of extra template variables, e.g. '{\"enable_thinking\": false}'");
  app.add_option("--chat-template", o->chat_template, "a template file or text to use instead of the model's");
  return [o]() {
    using nlohmann::ordered_json;
    auto read_json = [](const std::string& path, const char* what) -> Result<ordered_json> {
      TERN_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
      ordered_json j = ordered_json::parse(text, nullptr, false);
      if (j.is_discarded()) return Status::Errorf("{} file {} is not valid JSON", what, path);
      return j;
    };
    auto chat = ChatPrompt::Load(o->model, {.template_override = o->chat_template});
    if (!chat.ok()) return Fail(chat.status().message());
    ChatPrompt::Input in;
    auto msgs = read_json(o->messages, "--messages");
    if (!msgs.ok()) return Fail(msgs.status().message());
    in.messages = msgs->is_object() && msgs->contains("messages") ? (*msgs)["messages"] : *msgs;
    if (!in.messages.is_array()) return Fail("--messages must hold a JSON array of messages");
    if (!o->tools.empty()) {
      auto tools = read_json(o->tools, "--tools");
      if (!tools.ok()) return Fail(tools.status().message());
      in.tools = *tools;
    }
    if (!o->kwargs.empty()) {
      in.kwargs = ordered_json::parse(o->kwargs, nullptr, false);
      if (in.kwargs.is_discarded() || !in.kwargs.is_object()) return Fail("--kwargs must be a JSON object");
    }
    in.add_generation_prompt = !o->no_generation_prompt;
    auto text = chat->Render(in);
    if (!text.ok()) return Fail(text.status().message());
    fmt::print("{}", *text);
    return 0;
  };
}

}  // namespace tern::app
