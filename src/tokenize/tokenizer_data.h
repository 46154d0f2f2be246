// TokenizerData: everything a loaded tokenizer.json holds, shared (read-only)
// by Tokenizer copies and StreamDecoder. Internal to the tokenize module.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenize/added_vocabulary.h"
#include "tokenize/bpe_model.h"
#include "tokenize/normalizer.h"
#include "tokenize/post_processor.h"
#include "tokenize/pre_tokenizer.h"

namespace tern::tok {

enum class DecoderKind {
  kByteLevel,  // tokens -> bytes through the byte-level alphabet, concatenated
  kJoinSpace,  // no decoder: token strings joined with " "
};

struct TokenizerData {
  Normalizer normalizer;
  PreTokenizer pre_tokenizer;
  BpeModel model;
  AddedVocabulary added;
  PostProcessor post_processor;
  DecoderKind decoder = DecoderKind::kJoinSpace;

  StringIdMap added_ids;                 // added token content -> id
  std::vector<std::string> id_to_token;  // [vocab_size]; "" for holes
  enum : uint8_t { kHasToken = 1, kSpecial = 2 };
  std::vector<uint8_t> flags;            // [vocab_size]
  // What each id contributes to Decode's byte string before the lossy UTF-8
  // conversion: decoded_bytes[decoded_offsets[id] .. decoded_offsets[id+1]).
  std::string decoded_bytes;
  std::vector<uint32_t> decoded_offsets;  // [vocab_size + 1]

  int32_t vocab_size() const { return int32_t(id_to_token.size()); }
  bool HasToken(int32_t id) const {
    return id >= 0 && id < vocab_size() && (flags[size_t(id)] & kHasToken);
  }
  bool IsSpecial(int32_t id) const {
    return id >= 0 && id < vocab_size() && (flags[size_t(id)] & kSpecial);
  }
  std::string_view DecodedBytes(int32_t id) const {
    const uint32_t begin = decoded_offsets[size_t(id)];
    return std::string_view(decoded_bytes).substr(begin, decoded_offsets[size_t(id) + 1] - begin);
  }
};

}  // namespace tern::tok
