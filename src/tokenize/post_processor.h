// PostProcessor: the tokenizer.json "post_processor" for a single sequence,
// reduced to the ids it puts before and after the encoded text when
// add_special_tokens is true. Supported: TemplateProcessing (the "single"
// template), BertProcessing, RobertaProcessing, ByteLevel (adds nothing) and
// Sequence of these.
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/status.h"

namespace tern::tok {

struct PostProcessor {
  std::vector<int32_t> prefix;
  std::vector<int32_t> suffix;

  // Parses the "post_processor" value (null adds nothing).
  static Result<PostProcessor> FromJson(const nlohmann::json& j);
};

}  // namespace tern::tok
