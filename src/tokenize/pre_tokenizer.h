// PreTokenizer: the tokenizer.json "pre_tokenizer", splitting normalized text
// into the pieces the BPE model encodes one at a time.
//
// Supported: Split (regex or literal pattern; behaviours Removed, Isolated,
// MergedWithPrevious, MergedWithNext, Contiguous; invert), Digits,
// ByteLevel (add_prefix_space, use_regex with the GPT-2 pattern) and Sequence
// of these. ByteLevel only maps bytes to its alphabet, so pieces stay raw
// bytes here and the model maps them (see BpeModel); hence ByteLevel must be
// the last step.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/status.h"
#include "tokenize/regex.h"

namespace tern::tok {

// A piece: bytes [begin, end) of an arena string.
struct Piece {
  uint32_t begin = 0;
  uint32_t end = 0;
};

enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

class PreTokenizer {
 public:
  // Parses the "pre_tokenizer" value (null: the whole text is one piece).
  static Result<PreTokenizer> FromJson(const nlohmann::json& j);

  // True when the steps end with ByteLevel: pieces are raw bytes that the
  // model sees through the byte-level alphabet.
  bool byte_level() const { return byte_level_; }

  // Splits arena[whole] (valid UTF-8) into non-empty pieces appended to
  // *pieces. May append text to *arena (ByteLevel's prefix space), so callers
  // keep offsets, not pointers. `scratch` is reused between calls.
  Status Split(std::string* arena, Piece whole, std::vector<Piece>* pieces,
               std::vector<Piece>* scratch) const;

 private:
  struct SplitStep {
    Regex regex;
    SplitBehavior behavior = SplitBehavior::kIsolated;
    bool invert = false;
  };
  struct DigitsStep {
    bool individual_digits = false;
  };
  struct ByteLevelStep {
    bool add_prefix_space = false;
    bool use_regex = true;
  };
  using Step = std::variant<SplitStep, DigitsStep, ByteLevelStep>;

  static Status AppendSteps(const nlohmann::json& j, std::vector<Step>* steps);
  static Status ApplyStep(const Step& step, std::string* arena, Piece piece,
                          std::vector<Piece>* out);

  std::vector<Step> steps_;
  bool byte_level_ = false;
};

}  // namespace tern::tok
