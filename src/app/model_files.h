// Helpers shared by commands that open a model directory.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "tokenize/tokenizer.h"

namespace tern::app {

Result<Tokenizer> LoadTokenizer(const std::string& model_dir);
// Parses "1,2,3" (spaces allowed).
Result<std::vector<int32_t>> ParseIds(const std::string& text);

}  // namespace tern::app
