// StreamDecoder: incremental detokenization for streaming responses.
//
// Contract: the concatenation of every Push() result and the final Flush()
// equals Tokenizer::Decode(all pushed ids, skip_special_tokens). Push never
// returns a broken UTF-8 character: bytes of a character split across tokens
// are held back until it completes (a byte-level token can be half a
// character). Bytes that can no longer form a valid character are emitted as
// U+FFFD right away, as Decode would show them.
//
// Ids without a token are skipped (as Hugging Face's decode skips them);
// validate ids with Tokenizer::Decode when they come from a user.
#pragma once

#include <cstdint>
#include <string>

#include "tokenize/tokenizer.h"

namespace tern {

class StreamDecoder {
 public:
  // `tokenizer` must outlive the decoder.
  explicit StreamDecoder(const Tokenizer& tokenizer, bool skip_special_tokens);

  // Adds one id; returns the text it completes (possibly empty).
  std::string Push(int32_t id);
  // Returns the bytes still held back, invalid ones as U+FFFD, and resets.
  std::string Flush();

 private:
  const Tokenizer& tokenizer_;
  bool skip_special_tokens_;
  bool first_ = true;    // no token emitted yet (for the " " joiner)
  std::string pending_;  // bytes of an incomplete UTF-8 character (<= 3)
};

}  // namespace tern
