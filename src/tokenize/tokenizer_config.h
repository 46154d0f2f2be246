// TokenizerConfig: the parts of a Hugging Face tokenizer_config.json (and of
// an optional chat_template.jinja beside it) that a server needs.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace tern {

struct TokenizerConfig {
  // The chat template to render: chat_template.jinja when that file exists
  // (it takes precedence, as in transformers), else "chat_template" from the
  // config: a string, or in the list-of-{name, template} form the one named
  // "default". Empty when there is none.
  std::string chat_template;
  // Every template of the list form by name (empty for the string form).
  std::map<std::string, std::string> named_chat_templates;

  // Token strings, given as "<s>" or as {"content": "<s>", ...}; nullopt when
  // absent or null.
  std::optional<std::string> bos_token;
  std::optional<std::string> eos_token;
  std::optional<std::string> pad_token;
  std::optional<std::string> unk_token;

  // Whether transformers puts bos_token / eos_token around encoded text
  // (a slow-tokenizer setting: tokenizer.json's post-processor does not
  // necessarily do it, e.g. DeepSeek-V3 says add_bos_token=true while its
  // post-processor adds nothing). False when absent.
  bool add_bos_token = false;
  bool add_eos_token = false;

  // Maximum sequence length; nullopt when absent or "unlimited" (transformers
  // writes 1e30 for that, which is no integer).
  std::optional<int64_t> model_max_length;
};

// Parses tokenizer_config.json text. `chat_template_file`: the contents of
// chat_template.jinja when present.
Result<TokenizerConfig> ParseTokenizerConfig(
    std::string_view config_json, std::optional<std::string> chat_template_file = std::nullopt);

// Reads <model_dir>/tokenizer_config.json (required) and
// <model_dir>/chat_template.jinja (optional).
Result<TokenizerConfig> LoadTokenizerConfig(const std::string& model_dir);

}  // namespace tern
