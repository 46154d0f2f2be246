// The tokenizer and the model must agree on the id space: every id the
// tokenizer can produce indexes a row of the model's embedding.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "tokenize/tokenizer.h"

namespace tern {

// An error naming the largest token when the tokenizer's ids (vocabulary and
// added tokens) run past `model_vocab_size` (config.json vocab_size). Checked
// at load: otherwise every text that encodes to such an id would be refused.
inline Status CheckTokenizerFitsModel(const Tokenizer& tok, int64_t model_vocab_size, const std::string& dir) {
  if (tok.vocab_size() <= model_vocab_size) return Status::Ok();
  const int32_t last = tok.vocab_size() - 1;
  return Status::Errorf("{}: tokenizer.json has token id {} ('{}') but the model's vocab_size is {}: its ids "
                        "must be below vocab_size",
                        dir, last, tok.IdToToken(last), model_vocab_size);
}

}  // namespace tern
