#include "tokenize/bench_text.h"

#include <iterator>

namespace tern::tok {
namespace {

// Keep in sync with tools/tokenizer/bench_reference.mjs.
constexpr const char* kWords[] = {
    "the", "of", "and", "to", "in", "is", "was", "for", "that", "with", "as", "on", "by",
    "model", "token", "server", "request", "memory", "expert", "layer", "cache", "batch",
    "time", "people", "water", "language", "number", "system", "question", "answer",
    "because", "however", "although", "without", "between", "through", "important",
    "The", "This", "When", "It's", "don't", "we'll", "you're", "I've", "naïve", "café",
    "Zürich", "résumé", "straße", "数据", "模型", "推理", "服务器", "東京", "テスト"};
constexpr const char* kPunct[] = {",", ".", ";", ":", "!", "?", " -", " (", ")", "\""};

struct XorShift32 {
  uint32_t s;
  uint32_t Next() {
    s ^= s << 13;
    s ^= s >> 17;
    s ^= s << 5;
    return s;
  }
};

}  // namespace

std::string MakeBenchmarkText(size_t min_bytes) {
  XorShift32 rng{2463534242u};
  std::string text;
  text.reserve(min_bytes + 64);
  int words_in_line = 0;
  while (text.size() < min_bytes) {
    const uint32_t r = rng.Next() % 100;
    if (r < 80) {
      if (!text.empty() && text.back() != '\n') text += ' ';
      text += kWords[rng.Next() % std::size(kWords)];
    } else if (r < 88) {
      text += kPunct[rng.Next() % std::size(kPunct)];
    } else if (r < 94) {
      text += ' ';
      text += std::to_string(rng.Next() % 100000);
    } else if (r < 97) {
      text += "\n    x = f(y[" + std::to_string(rng.Next() % 64) + "]) + 1;";
    } else {
      text += "\n\n";
      words_in_line = 0;
    }
    if (++words_in_line > 18) {
      text += '\n';
      words_in_line = 0;
    }
  }
  return text;
}

uint64_t Fnv1a64(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace tern::tok
