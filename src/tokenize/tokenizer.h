// Tokenizer: a Hugging Face tokenizer.json (byte-level BPE: Qwen3,
// DeepSeek-V3, gpt-oss, GPT-2 style) that encodes and decodes exactly as the
// Hugging Face Rust `tokenizers` library does.
//
// Pipeline of Encode (as in tokenizers' TokenizerImpl::encode_single_sequence):
//   1. added tokens with normalized=false are cut out of the raw text;
//   2. the text between them is normalized (NFC, ...), then added tokens with
//      normalized=true are cut out of it;
//   3. the remaining text is pre-tokenized (regex Split, ByteLevel, ...);
//   4. each piece is encoded by the BPE model;
//   5. with add_special_tokens, the post-processor's ids are put around.
// Decode maps ids to tokens (dropping special ones on request), then applies
// the decoder (ByteLevel: tokens back to bytes, invalid UTF-8 -> U+FFFD).
//
// Differences from Hugging Face, all on input it would not reject:
//  - Encode rejects invalid UTF-8 (HF takes only Rust strings, so the bytes
//    cannot occur there) and Decode rejects ids that have no token (HF skips
//    them silently).
//  - "truncation" and "padding" settings in the file are ignored, as
//    transformers does unless asked for them per call.
// Like Hugging Face, added tokens get their ids the way AddedVocabulary
// assigns them on load (their model-vocabulary id, else the next id after
// the model's vocabulary); the "id" fields of the file are not trusted.
// Not supported (load error naming them): other models than BPE, BPE
// dropout, Lowercase/Replace/Strip-style normalizers, Metaspace-style
// pre-tokenizers, decoders other than ByteLevel.
// A Tokenizer is immutable; all methods are thread-safe. Copies share data.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace tern {
namespace tok {
struct TokenizerData;
}

class Tokenizer {
 public:
  // Loads tokenizer.json. Errors name the file and the offending field.
  static Result<Tokenizer> FromFile(const std::string& path);
  static Result<Tokenizer> FromJson(std::string_view json);

  // Encodes UTF-8 text; invalid UTF-8 is an error naming the byte offset.
  Result<std::vector<int32_t>> Encode(std::string_view text,
                                      bool add_special_tokens = true) const;

  // Decodes ids to UTF-8 text. An id without a token (negative, >=
  // vocab_size(), or a hole in the vocabulary) is an error.
  Result<std::string> Decode(std::span<const int32_t> ids, bool skip_special_tokens) const;

  // The id of a token string as it appears in the vocabulary ("Ġthe",
  // "<|im_end|>"), added tokens included.
  std::optional<int32_t> TokenToId(std::string_view token) const;
  // The token string of an id; empty when the id has no token.
  std::string_view IdToToken(int32_t id) const;
  // Largest id + 1, counting the model vocabulary and the added tokens.
  int32_t vocab_size() const;
  // True for added tokens marked special (those skip_special_tokens drops).
  bool IsSpecial(int32_t id) const;

  // Internal: the shared tables (used by StreamDecoder).
  const tok::TokenizerData& data() const { return *data_; }

 private:
  explicit Tokenizer(std::shared_ptr<const tok::TokenizerData> data) : data_(std::move(data)) {}
  std::shared_ptr<const tok::TokenizerData> data_;
};

}  // namespace tern
