#include "model/weight_check.h"

#include <cstring>

#include <fmt/format.h>

namespace tern {
namespace {

// Counts the elements of [begin, end) whose bits mark NaN/Inf; *first gets the
// lowest such index (or stays untouched).
template <typename Bits>
int64_t CountNonFinite(const uint8_t* data, int64_t begin, int64_t end, Bits exp_mask, Bits nan_only_mask,
                       int64_t* first) {
  int64_t n = 0;
  for (int64_t i = begin; i < end; ++i) {
    Bits b;
    std::memcpy(&b, data + size_t(i) * sizeof(Bits), sizeof(Bits));  // not necessarily aligned
    // exp_mask: the exponent field is all ones; nan_only_mask (E4M3): the whole magnitude is.
    const bool bad = nan_only_mask ? (b & nan_only_mask) == nan_only_mask : (b & exp_mask) == exp_mask;
    if (bad && n++ == 0) *first = i;
  }
  return n;
}

int64_t Scan(const TensorView& t, int64_t begin, int64_t end, int64_t* first) {
  switch (t.dtype) {
    case DType::kF32: return CountNonFinite<uint32_t>(t.data, begin, end, 0x7F800000u, 0, first);
    case DType::kF16: return CountNonFinite<uint16_t>(t.data, begin, end, 0x7C00, 0, first);
    case DType::kBF16: return CountNonFinite<uint16_t>(t.data, begin, end, 0x7F80, 0, first);
    case DType::kF8E4M3: return CountNonFinite<uint8_t>(t.data, begin, end, 0, 0x7F, first);
    default: return 0;
  }
}

}  // namespace

std::vector<NonFiniteTensor> FindNonFiniteWeights(const TensorStore& store, ThreadPool& pool, int part, int parts,
                                                  const std::function<void(int64_t, int64_t)>& progress) {
  // Work in pieces of up to 1M elements so one large tensor spreads over every thread.
  constexpr int64_t kPiece = int64_t(1) << 20;
  struct Piece {
    const TensorView* t;
    int64_t begin, end;
    int64_t count = 0, first = 0;
  };
  std::vector<Piece> pieces;
  int index = -1;
  for (const auto& [name, t] : store.all()) {
    if (++index % parts != part) continue;
    const int64_t n = t.numel();
    if (t.dtype != DType::kF32 && t.dtype != DType::kF16 && t.dtype != DType::kBF16 && t.dtype != DType::kF8E4M3)
      continue;
    for (int64_t b = 0; b < n; b += kPiece) pieces.push_back({&t, b, std::min(n, b + kPiece)});
  }
  // In batches of ~1 GiB (whole pieces), so `progress` can be told between them.
  auto bytes_of = [](const Piece& p) { return (p.end - p.begin) * int64_t(DTypeSize(p.t->dtype)); };
  int64_t total = 0, done = 0;
  for (const Piece& p : pieces) total += bytes_of(p);
  for (size_t b = 0; b < pieces.size();) {
    size_t e = b;
    int64_t batch = 0;
    while (e < pieces.size() && (e == b || batch < (int64_t(1) << 30))) batch += bytes_of(pieces[e++]);
    pool.Run(e - b, [&](size_t i, size_t) {
      Piece& p = pieces[b + i];
      p.count = Scan(*p.t, p.begin, p.end, &p.first);
    });
    done += batch;
    b = e;
    if (progress) progress(done, total);
  }
  std::vector<NonFiniteTensor> found;
  for (const Piece& p : pieces) {  // in name order, pieces of a tensor in element order
    if (p.count == 0) continue;
    if (found.empty() || found.back().name != p.t->name) found.push_back({p.t->name, 0, p.first});
    found.back().count += p.count;
  }
  return found;
}

std::string DescribeNonFinite(const std::vector<NonFiniteTensor>& found, size_t max_lines) {
  std::string out;
  for (size_t i = 0; i < found.size() && i < max_lines; ++i)
    out += fmt::format("{}'{}': {} non-finite value{} (first at element {})", i ? "; " : "", found[i].name,
                       found[i].count, found[i].count == 1 ? "" : "s", found[i].first);
  if (found.size() > max_lines) out += fmt::format("; and {} more tensors", found.size() - max_lines);
  return out;
}

}  // namespace tern
