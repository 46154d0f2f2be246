// The fixed text the tokenizer benchmarks encode, built deterministically so
// that tools/tokenizer/bench_reference.mjs (which builds the same text for
// the Hugging Face reference) and tern's benchmark time the same work:
// mostly English prose with numbers, punctuation and code-like lines, some
// accented and CJK words. Both print its length and FNV-1a hash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tern::tok {

std::string MakeBenchmarkText(size_t min_bytes);
uint64_t Fnv1a64(std::string_view s);

}  // namespace tern::tok
