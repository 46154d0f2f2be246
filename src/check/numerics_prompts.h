// The prompts of the numerics suite: a built-in set (chat turns with and
// without thinking, code, arithmetic, a long-context one) or the user's file.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "check/numerics_reference.h"

namespace tern::check {

// The built-in set; the long-context prompt has about `long_context_tokens` tokens.
std::vector<NumericsPrompt> BuiltInNumericsPrompts(int long_context_tokens);

// A prompts file, one prompt a line (blank lines and lines starting with '#'
// skipped): a JSON object {"name"?, "messages": [...], "thinking"?: bool}
// (chat) or {"name"?, "prompt": "raw text"}; any other line is one user
// message with thinking off. Errors name the line.
Result<std::vector<NumericsPrompt>> LoadNumericsPrompts(const std::string& path);

}  // namespace tern::check
