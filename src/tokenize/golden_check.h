// Shared by the golden tests: checks a Tokenizer against a goldens file
// written by tools/tokenizer/make_goldens.mjs (format described there).
#pragma once

#include <string>

#include "tokenize/tokenizer.h"

namespace tern::tok::testing {

struct GoldenHeader {
  std::string tokenizer;  // what the goldens were made from
  std::string sha256;     // of that tokenizer.json
};

// Reads the header line of a goldens file; false (with a gtest failure) when
// the file is missing or malformed.
bool ReadGoldenHeader(const std::string& golden_path, GoldenHeader* header);

struct GoldenCounts {
  int texts = 0;
  int decodes = 0;
  int failures = 0;
};

// Checks every line: Encode ids (with and without special tokens), Decode
// with and without skipping special tokens, and StreamDecoder output equal to
// the expected Decode. Reports the first mismatches as gtest failures.
GoldenCounts CheckGoldenFile(const Tokenizer& tokenizer, const std::string& golden_path,
                             const std::string& label);

}  // namespace tern::tok::testing
