// tokenizer_config.json (ParseTokenizerConfig), optionally followed by a NUL
// byte and the text of chat_template.jinja; the chat template it yields is
// parsed as the server parses it at startup.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "template/template.h"
#include "tokenize/tokenizer_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string in(reinterpret_cast<const char*>(data), size);
  const size_t nul = in.find('\0');
  std::optional<std::string> file;
  if (nul != std::string::npos) file = in.substr(nul + 1);
  auto c = tern::ParseTokenizerConfig(std::string_view(in).substr(0, nul), file);
  if (c.ok() && !c->chat_template.empty()) (void)tern::jinja::Template::Parse(c->chat_template);
  return 0;
}
