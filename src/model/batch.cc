#include "model/batch.h"

#include <cmath>

namespace tern {

void BatchLayout::Build(std::span<const SequenceChunk> chunks, int64_t rot, double theta) {
  seqs = chunks;
  row_begin.assign(1, 0);
  for (const auto& c : chunks) row_begin.push_back(row_begin.back() + int64_t(c.tokens.size()));
  rows = row_begin.back();
  positions.resize(size_t(rows));
  for (size_t i = 0; i < chunks.size(); ++i)
    for (int64_t t = 0; t < int64_t(chunks[i].tokens.size()); ++t)
      positions[size_t(row_begin[i] + t)] = int32_t(chunks[i].start_pos + t);
  rotary_dim = rot;
  const int64_t half = rot / 2;
  rope_cos.resize(size_t(rows * half));
  rope_sin.resize(size_t(rows * half));
  // inv_freq[i] = theta^(-2i/rot), as in transformers' default RoPE; angles in double.
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < half; ++i) {
      const double inv_freq = 1.0 / std::pow(theta, double(2 * i) / double(rot));
      const double a = double(positions[size_t(r)]) * inv_freq;
      rope_cos[size_t(r * half + i)] = float(std::cos(a));
      rope_sin[size_t(r * half + i)] = float(std::sin(a));
    }
}

}  // namespace tern
