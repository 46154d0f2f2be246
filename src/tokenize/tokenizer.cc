#include "tokenize/tokenizer.h"

#include "tokenize/tokenizer_data.h"
#include "tokenize/utf8.h"

namespace tern {
namespace {

using tok::Piece;
using tok::Segment;
using tok::TokenizerData;

// Reusable buffers of one Encode call.
struct EncodeScratch {
  std::vector<Segment> raw_segments, normalized_segments;
  std::string arena;  // normalized text, then prefix-space copies
  std::vector<Piece> pieces, pieces_scratch;
  std::vector<int32_t> symbols;
};

// Steps 2-4 of the pipeline for text between raw-matched added tokens.
Status EncodeText(const TokenizerData& d, std::string_view text, EncodeScratch* s,
                  std::vector<int32_t>* ids) {
  TERN_RETURN_IF_ERROR(d.normalizer.Apply(text, &s->arena));
  if (s->arena.empty()) return Status::Ok();
  s->normalized_segments.clear();
  if (d.added.has_normalized()) {
    d.added.Split(s->arena, /*normalized_set=*/true, &s->normalized_segments);
  } else {
    s->normalized_segments.push_back({0, uint32_t(s->arena.size()), -1});
  }
  for (const Segment& seg : s->normalized_segments) {
    if (seg.id >= 0) {
      ids->push_back(seg.id);
      continue;
    }
    if (seg.end <= seg.begin) continue;
    s->pieces.clear();
    TERN_RETURN_IF_ERROR(d.pre_tokenizer.Split(&s->arena, Piece{seg.begin, seg.end},
                                               &s->pieces, &s->pieces_scratch));
    for (const Piece& p : s->pieces) {
      d.model.Tokenize(std::string_view(s->arena).substr(p.begin, p.end - p.begin), ids,
                       &s->symbols);
    }
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<int32_t>> Tokenizer::Encode(std::string_view text,
                                               bool add_special_tokens) const {
  const TokenizerData& d = *data_;
  if (text.size() > UINT32_MAX / 4) return Status::Error("input text too long (> 1 GiB)");
  const size_t bad = tok::FindInvalidUtf8(text);
  if (bad != text.size()) {
    return Status::Errorf("input is not valid UTF-8 (invalid byte 0x{:02X} at offset {})",
                          uint8_t(text[bad]), bad);
  }
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 8);
  if (add_special_tokens) ids = d.post_processor.prefix;
  EncodeScratch s;
  d.added.Split(text, /*normalized_set=*/false, &s.raw_segments);
  for (const Segment& seg : s.raw_segments) {
    if (seg.id >= 0) {
      ids.push_back(seg.id);
    } else if (seg.end > seg.begin) {
      TERN_RETURN_IF_ERROR(EncodeText(d, text.substr(seg.begin, seg.end - seg.begin), &s, &ids));
    }
  }
  if (add_special_tokens) {
    ids.insert(ids.end(), d.post_processor.suffix.begin(), d.post_processor.suffix.end());
  }
  return ids;
}

Result<std::string> Tokenizer::Decode(std::span<const int32_t> ids,
                                      bool skip_special_tokens) const {
  const TokenizerData& d = *data_;
  std::string bytes;
  bool first = true;
  for (int32_t id : ids) {
    if (!d.HasToken(id)) {
      return Status::Errorf("token id {} has no token (vocabulary size {})", id, d.vocab_size());
    }
    if (skip_special_tokens && d.IsSpecial(id)) continue;
    if (d.decoder == tok::DecoderKind::kJoinSpace && !first) bytes.push_back(' ');
    bytes.append(d.DecodedBytes(id));
    first = false;
  }
  std::string text;
  text.reserve(bytes.size());
  tok::AppendUtf8Lossy(bytes, &text);
  return text;
}

std::optional<int32_t> Tokenizer::TokenToId(std::string_view token) const {
  if (auto it = data_->added_ids.find(token); it != data_->added_ids.end()) return it->second;
  return data_->model.TokenToId(token);
}

std::string_view Tokenizer::IdToToken(int32_t id) const {
  if (!data_->HasToken(id)) return {};
  return data_->id_to_token[size_t(id)];
}

int32_t Tokenizer::vocab_size() const { return data_->vocab_size(); }

bool Tokenizer::IsSpecial(int32_t id) const { return data_->IsSpecial(id); }

}  // namespace tern
