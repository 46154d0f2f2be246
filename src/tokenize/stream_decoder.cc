#include "tokenize/stream_decoder.h"

#include "tokenize/tokenizer_data.h"
#include "tokenize/utf8.h"

namespace tern {

StreamDecoder::StreamDecoder(const Tokenizer& tokenizer, bool skip_special_tokens)
    : tokenizer_(tokenizer), skip_special_tokens_(skip_special_tokens) {}

std::string StreamDecoder::Push(int32_t id) {
  const tok::TokenizerData& d = tokenizer_.data();
  if (!d.HasToken(id) || (skip_special_tokens_ && d.IsSpecial(id))) return {};
  if (d.decoder == tok::DecoderKind::kJoinSpace && !first_) pending_.push_back(' ');
  first_ = false;
  pending_.append(d.DecodedBytes(id));
  // Lossy decoding works left to right and only looks ahead within one
  // character, so everything before a trailing incomplete character decodes
  // now exactly as it will inside the whole stream.
  const size_t complete = tok::CompleteUtf8PrefixLength(pending_);
  std::string out;
  tok::AppendUtf8Lossy(std::string_view(pending_).substr(0, complete), &out);
  pending_.erase(0, complete);
  return out;
}

std::string StreamDecoder::Flush() {
  std::string out;
  tok::AppendUtf8Lossy(pending_, &out);
  pending_.clear();
  first_ = true;
  return out;
}

}  // namespace tern
