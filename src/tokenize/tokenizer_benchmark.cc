// Encoding / decoding speed with Qwen3's real tokenizer.json on a fixed text
// (bench_text.h); tools/tokenizer/bench_reference.mjs times Hugging Face's
// Rust tokenizers on the same text.
#include <cstdio>
#include <optional>

#include <benchmark/benchmark.h>

#include "tokenize/bench_text.h"
#include "tokenize/stream_decoder.h"
#include "tokenize/test_util.h"
#include "tokenize/tokenizer.h"

namespace tern {
namespace {

const std::string& Text() {
  static const std::string text = [] {
    std::string t = tok::MakeBenchmarkText(512 * 1024);
    std::printf("text: %zu bytes, fnv1a64 %llx\n", t.size(),
                static_cast<unsigned long long>(tok::Fnv1a64(t)));
    return t;
  }();
  return text;
}

const Tokenizer* Qwen3() {
  static const std::optional<Tokenizer> t = []() -> std::optional<Tokenizer> {
    auto path = tok::testing::NpmTokenizerFile("qwen3", "tokenizer.json");
    if (!path) return std::nullopt;
    auto loaded = Tokenizer::FromFile(*path);
    if (!loaded.ok()) return std::nullopt;
    return std::move(loaded).value();
  }();
  return t ? &*t : nullptr;
}

void BM_EncodeQwen3(benchmark::State& state) {
  const Tokenizer* t = Qwen3();
  if (!t) return state.SkipWithError("Qwen3 tokenizer.json missing (scripts/fetch-test-data.sh)");
  const std::string& text = Text();
  size_t tokens = 0;
  for (auto _ : state) {
    auto ids = t->Encode(text);
    tokens = ids->size();
    benchmark::DoNotOptimize(ids);
  }
  state.SetBytesProcessed(int64_t(state.iterations() * text.size()));
  state.counters["tokens"] = double(tokens);
}
BENCHMARK(BM_EncodeQwen3)->Unit(benchmark::kMillisecond);

// Chat-sized requests: 2 KB pieces of the text.
void BM_EncodeQwen3Chunks(benchmark::State& state) {
  const Tokenizer* t = Qwen3();
  if (!t) return state.SkipWithError("Qwen3 tokenizer.json missing");
  const std::string& text = Text();
  for (auto _ : state) {
    for (size_t off = 0; off + 2048 <= text.size(); off += 2048) {
      // Cut at a character boundary.
      size_t end = off + 2048;
      while (end < text.size() && (uint8_t(text[end]) & 0xC0) == 0x80) ++end;
      size_t begin = off;
      while (begin < end && (uint8_t(text[begin]) & 0xC0) == 0x80) ++begin;
      benchmark::DoNotOptimize(t->Encode(std::string_view(text).substr(begin, end - begin)));
    }
  }
  state.SetBytesProcessed(int64_t(state.iterations() * text.size()));
}
BENCHMARK(BM_EncodeQwen3Chunks)->Unit(benchmark::kMillisecond);

void BM_DecodeQwen3(benchmark::State& state) {
  const Tokenizer* t = Qwen3();
  if (!t) return state.SkipWithError("Qwen3 tokenizer.json missing");
  const auto ids = t->Encode(Text()).value();
  for (auto _ : state) benchmark::DoNotOptimize(t->Decode(ids, true));
  state.SetItemsProcessed(int64_t(state.iterations() * ids.size()));
}
BENCHMARK(BM_DecodeQwen3)->Unit(benchmark::kMillisecond);

void BM_StreamDecodeQwen3(benchmark::State& state) {
  const Tokenizer* t = Qwen3();
  if (!t) return state.SkipWithError("Qwen3 tokenizer.json missing");
  const auto ids = t->Encode(Text()).value();
  for (auto _ : state) {
    StreamDecoder d(*t, true);
    for (int32_t id : ids) benchmark::DoNotOptimize(d.Push(id));
    benchmark::DoNotOptimize(d.Flush());
  }
  state.SetItemsProcessed(int64_t(state.iterations() * ids.size()));
}
BENCHMARK(BM_StreamDecodeQwen3)->Unit(benchmark::kMillisecond);

void BM_LoadQwen3(benchmark::State& state) {
  auto path = tok::testing::NpmTokenizerFile("qwen3", "tokenizer.json");
  if (!path) return state.SkipWithError("Qwen3 tokenizer.json missing");
  for (auto _ : state) benchmark::DoNotOptimize(Tokenizer::FromFile(*path));
}
BENCHMARK(BM_LoadQwen3)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace
}  // namespace tern

BENCHMARK_MAIN();
