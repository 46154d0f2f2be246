// StreamDecoder: never a broken character, held-back bytes released when
// the character completes, invalid bytes shown as U+FFFD as Decode shows
// them, special tokens skipped on request, and the whole stream equal to
// Decode (which the golden tests check against Hugging Face).
#include "tokenize/stream_decoder.h"

#include <random>

#include <gtest/gtest.h>

#include "tokenize/synthetic.h"
#include "tokenize/utf8.h"

namespace tern {
namespace {

const Tokenizer& Synthetic() {
  static const Tokenizer t = Tokenizer::FromJson(MakeSyntheticTokenizerJson(512)).value();
  return t;
}

// The id of the byte-level token for one raw byte.
int32_t ByteId(uint8_t b) {
  std::string s;
  // GPT-2 alphabet: printable Latin-1 bytes map to themselves.
  const bool self = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
  int n = 0;
  for (int x = 0; x < b; ++x) {
    const bool sx = (x >= 0x21 && x <= 0x7E) || (x >= 0xA1 && x <= 0xAC) || x >= 0xAE;
    if (!sx) ++n;
  }
  tok::AppendCodePoint(self ? char32_t(b) : char32_t(256 + n), &s);
  return Synthetic().TokenToId(s).value();
}

TEST(StreamDecoder, HoldsBackSplitCharacters) {
  StreamDecoder d(Synthetic(), false);
  // "你" = E4 BD A0, "😀" = F0 9F 98 80, one byte token each.
  EXPECT_EQ(d.Push(ByteId('a')), "a");
  EXPECT_EQ(d.Push(ByteId(0xE4)), "");
  EXPECT_EQ(d.Push(ByteId(0xBD)), "");
  EXPECT_EQ(d.Push(ByteId(0xA0)), "\xE4\xBD\xA0");
  EXPECT_EQ(d.Push(ByteId(0xF0)), "");
  EXPECT_EQ(d.Push(ByteId(0x9F)), "");
  EXPECT_EQ(d.Push(ByteId(0x98)), "");
  EXPECT_EQ(d.Push(ByteId(0x80)), "\xF0\x9F\x98\x80");
  EXPECT_EQ(d.Flush(), "");
}

TEST(StreamDecoder, InvalidBytesBecomeReplacementCharacters) {
  StreamDecoder d(Synthetic(), false);
  EXPECT_EQ(d.Push(ByteId(0xE4)), "");
  // 'x' cannot continue E4: the held byte becomes U+FFFD right away.
  EXPECT_EQ(d.Push(ByteId('x')), "\xEF\xBF\xBDx");
  EXPECT_EQ(d.Push(ByteId(0x80)), "\xEF\xBF\xBD");  // lone continuation byte
  EXPECT_EQ(d.Push(ByteId(0xF0)), "");
  EXPECT_EQ(d.Push(ByteId(0x9F)), "");
  EXPECT_EQ(d.Flush(), "\xEF\xBF\xBD");  // truncated at the end: one U+FFFD
}

TEST(StreamDecoder, SpecialTokens) {
  const Tokenizer& t = Synthetic();
  const int32_t im_start = t.TokenToId("<|im_start|>").value();
  const int32_t think = t.TokenToId("<think>").value();
  StreamDecoder skip(t, true), keep(t, false);
  EXPECT_EQ(skip.Push(im_start), "");
  EXPECT_EQ(keep.Push(im_start), "<|im_start|>");
  EXPECT_EQ(skip.Push(think), "<think>");  // special=false: kept
  EXPECT_EQ(keep.Push(think), "<think>");
  // A special token between the bytes of a character does not break it.
  StreamDecoder d(t, true);
  EXPECT_EQ(d.Push(ByteId(0xE4)), "");
  EXPECT_EQ(d.Push(im_start), "");
  EXPECT_EQ(d.Push(ByteId(0xBD)), "");
  EXPECT_EQ(d.Push(ByteId(0xA0)), "\xE4\xBD\xA0");
}

TEST(StreamDecoder, IdsWithoutTokenAreSkipped) {
  StreamDecoder d(Synthetic(), false);
  EXPECT_EQ(d.Push(-1), "");
  EXPECT_EQ(d.Push(1 << 20), "");
  EXPECT_EQ(d.Push(ByteId('z')), "z");
}

TEST(StreamDecoder, RandomStreamsEqualDecode) {
  const Tokenizer& t = Synthetic();
  std::mt19937 rng(5);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<int32_t> ids(1 + rng() % 30);
    for (auto& id : ids) id = int32_t(rng() % uint32_t(t.vocab_size()));
    for (bool skip : {false, true}) {
      StreamDecoder d(t, skip);
      std::string streamed;
      for (int32_t id : ids) {
        std::string piece = d.Push(id);
        ASSERT_TRUE(tok::IsValidUtf8(piece));
        streamed += piece;
      }
      streamed += d.Flush();
      EXPECT_EQ(streamed, t.Decode(ids, skip).value());
    }
  }
}

}  // namespace
}  // namespace tern
