// tokenizer.json (Tokenizer::FromJson); a tokenizer that loads then encodes
// and decodes a fixed text, streams the ids back, and decodes every id below
// 512.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenize/stream_decoder.h"
#include "tokenize/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto tok = tern::Tokenizer::FromJson(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!tok.ok()) return 0;
  static const std::string kText =
      "Hello, world! <|im_start|>user\n  héllo wörld 你好 123 4567 it's\t\r\n<think></think> \xF0\x9F\x98\x80";
  for (bool special : {true, false}) {
    auto ids = tok->Encode(kText, special);
    if (!ids.ok()) continue;
    (void)tok->Decode(*ids, false);
    (void)tok->Decode(*ids, true);
    tern::StreamDecoder sd(*tok, special);
    for (int32_t id : *ids) (void)sd.Push(id);
    (void)sd.Flush();
  }
  const int32_t n = tok->vocab_size() < 512 ? tok->vocab_size() : 512;
  for (int32_t id = -1; id <= n; ++id) {
    const int32_t one[] = {id};
    (void)tok->Decode(one, false);
    const std::string_view t = tok->IdToToken(id);
    if (!t.empty()) (void)tok->TokenToId(t);
    (void)tok->IsSpecial(id);
  }
  return 0;
}
