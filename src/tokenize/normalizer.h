// Normalizer: the tokenizer.json "normalizer" (Unicode normal forms via
// utf8proc, Sequence of them, or none). Applied to the text between added
// tokens before pre-tokenization, as Hugging Face does.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/status.h"

namespace tern::tok {

// Fast path of NFC: true when NFC(s) == s is certain from the code points
// alone (s valid UTF-8). False means "normalize to find out".
bool IsNfcStable(std::string_view s);
bool IsNfcStableCodePoint(char32_t cp);

class Normalizer {
 public:
  enum class Form { kNfc, kNfd, kNfkc, kNfkd };

  // Parses the "normalizer" value (null gives the identity). Unsupported
  // types are an error naming them.
  static Result<Normalizer> FromJson(const nlohmann::json& j);

  bool is_identity() const { return forms_.empty(); }
  // Normalizes valid UTF-8 `text` into *out (replacing it).
  Status Apply(std::string_view text, std::string* out) const;

 private:
  std::vector<Form> forms_;  // applied in order
};

}  // namespace tern::tok
