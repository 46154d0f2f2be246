#include "tokenize/bpe_model.h"

#include <algorithm>
#include <cstring>
#include <queue>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tokenize/bpe_cache.h"
#include "tokenize/byte_level.h"
#include "tokenize/utf8.h"

namespace tern::tok {

// ---------------------------------------------------------------- MergeTable

void MergeTable::Reserve(size_t n) {
  size_t cap = 16;
  int bits = 4;
  while (cap < 2 * n) {
    cap <<= 1;
    ++bits;
  }
  if (cap <= slots_.size()) return;
  std::vector<Entry> old = std::move(slots_);
  slots_.assign(cap, Entry{});
  mask_ = cap - 1;
  shift_ = 64 - bits;
  size_ = 0;
  for (const Entry& e : old) {
    if (e.key != kEmpty) Put(int32_t(e.key >> 32), int32_t(uint32_t(e.key)), e.rank, e.merged);
  }
}

void MergeTable::Put(int32_t left, int32_t right, uint32_t rank, int32_t merged) {
  if (2 * (size_ + 1) > slots_.size()) Reserve(size_ + 1);
  const uint64_t key = Key(left, right);
  size_t i = Slot(key);
  while (slots_[i].key != kEmpty && slots_[i].key != key) i = (i + 1) & mask_;
  if (slots_[i].key == kEmpty) ++size_;
  slots_[i] = Entry{key, rank, merged};
}

// ------------------------------------------------------------ merge routines

namespace {
constexpr uint32_t kNoMerge = UINT32_MAX;
// Words longer than this use the heap (O(n log n)) instead of the O(n^2)
// scan, which is faster on the short words that dominate real text.
constexpr size_t kFastMaxSymbols = 128;
}  // namespace

void MergeWordNaive(const MergeTable& merges, std::vector<int32_t>* symbols) {
  std::vector<int32_t>& s = *symbols;
  while (s.size() >= 2) {
    const MergeTable::Entry* best = nullptr;
    size_t best_i = 0;
    for (size_t i = 0; i + 1 < s.size(); ++i) {
      const MergeTable::Entry* e = merges.Find(s[i], s[i + 1]);
      if (e && (!best || e->rank < best->rank)) {
        best = e;
        best_i = i;
      }
    }
    if (!best) break;
    s[best_i] = best->merged;
    s.erase(s.begin() + ptrdiff_t(best_i) + 1);
  }
}

void MergeWordFast(const MergeTable& merges, std::vector<int32_t>* symbols) {
  std::vector<int32_t>& s = *symbols;
  size_t n = s.size();
  if (n < 2) return;
  if (n > kFastMaxSymbols) {
    MergeWordHeap(merges, symbols);
    return;
  }
  // rank[i], merged[i]: the merge of pair (s[i], s[i+1]).
  uint32_t rank[kFastMaxSymbols];
  int32_t merged[kFastMaxSymbols];
  auto lookup = [&](size_t i) {
    const MergeTable::Entry* e = merges.Find(s[i], s[i + 1]);
    rank[i] = e ? e->rank : kNoMerge;
    merged[i] = e ? e->merged : -1;
  };
  for (size_t i = 0; i + 1 < n; ++i) lookup(i);
  while (n >= 2) {
    size_t best = 0;
    for (size_t i = 1; i + 1 < n; ++i) {
      if (rank[i] < rank[best]) best = i;
    }
    if (rank[best] == kNoMerge) break;
    s[best] = merged[best];
    // Drop symbol best+1 and pair best+1 (pair `best` is recomputed).
    std::memmove(&s[best + 1], &s[best + 2], (n - best - 2) * sizeof(int32_t));
    if (best + 2 < n) {
      std::memmove(&rank[best + 1], &rank[best + 2], (n - best - 3) * sizeof(uint32_t));
      std::memmove(&merged[best + 1], &merged[best + 2], (n - best - 3) * sizeof(int32_t));
    }
    --n;
    if (best + 1 < n) lookup(best);
    if (best > 0) lookup(best - 1);
  }
  s.resize(n);
}

void MergeWordHeap(const MergeTable& merges, std::vector<int32_t>* symbols) {
  std::vector<int32_t>& s = *symbols;
  const size_t n = s.size();
  if (n < 2) return;
  // A doubly linked list over the original positions; a merged symbol keeps
  // the position of its left part, the right part is marked dead.
  std::vector<int32_t> prev(n), next(n);
  std::vector<uint8_t> alive(n, 1);
  for (size_t i = 0; i < n; ++i) {
    prev[i] = int32_t(i) - 1;
    next[i] = i + 1 < n ? int32_t(i + 1) : -1;
  }
  struct Candidate {
    uint32_t rank;
    uint32_t pos;
    int32_t merged;
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  auto push = [&](size_t pos) {
    if (next[pos] < 0) return;
    const MergeTable::Entry* e = merges.Find(s[pos], s[size_t(next[pos])]);
    if (e) queue.push({e->rank, uint32_t(pos), e->merged});
  };
  for (size_t i = 0; i + 1 < n; ++i) push(i);
  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    const size_t pos = top.pos;
    if (!alive[pos] || next[pos] < 0) continue;
    const size_t right = size_t(next[pos]);
    // Skip entries made stale by earlier merges.
    const MergeTable::Entry* e = merges.Find(s[pos], s[right]);
    if (!e || e->merged != top.merged) continue;
    s[pos] = top.merged;
    alive[right] = 0;
    next[pos] = next[right];
    if (next[right] >= 0) prev[size_t(next[right])] = int32_t(pos);
    if (prev[pos] >= 0) push(size_t(prev[pos]));
    push(pos);
  }
  size_t out = 0;
  for (size_t i = 0; i < n; ++i) {
    if (alive[i]) s[out++] = s[i];
  }
  s.resize(out);
}

// ------------------------------------------------------------------ BpeModel

namespace {

Result<std::vector<std::pair<std::string, std::string>>> ParseMerges(const nlohmann::json& j) {
  if (!j.is_array()) return Status::Error("\"merges\" must be an array");
  std::vector<std::pair<std::string, std::string>> merges;
  merges.reserve(j.size());
  const bool legacy = !j.empty() && j[0].is_string();
  size_t index = 0;
  for (const auto& m : j) {
    ++index;
    if (legacy) {
      if (!m.is_string()) return Status::Errorf("merges[{}]: mixed merge formats", index - 1);
      const std::string& line = m.get_ref<const std::string&>();
      if (line.rfind("#version", 0) == 0) continue;
      const size_t space = line.find(' ');
      if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos) {
        return Status::Errorf("merges[{}]: {:?} is not two tokens separated by one space",
                              index - 1, line);
      }
      merges.emplace_back(line.substr(0, space), line.substr(space + 1));
    } else {
      if (!m.is_array() || m.size() != 2 || !m[0].is_string() || !m[1].is_string()) {
        return Status::Errorf("merges[{}]: expected a pair of strings", index - 1);
      }
      merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    }
  }
  return merges;
}

}  // namespace

Result<BpeModel> BpeModel::FromJson(const nlohmann::json& j, bool byte_level) {
  if (!j.is_object()) return Status::Error("\"model\" must be an object");
  if (j.contains("type") && j["type"] != "BPE") {
    return Status::Errorf("model type {} is not supported (only BPE)", j["type"].dump());
  }
  BpeModel m;
  m.byte_level_ = byte_level;
  m.cache_owner_ = BpeCache::NewOwner();
  if (j.contains("dropout") && !j["dropout"].is_null() &&
      !(j["dropout"].is_number() && j["dropout"].get<double>() == 0.0)) {
    return Status::Error("BPE dropout is not supported (it makes encoding random)");
  }
  auto get_string = [&](const char* key) -> std::optional<std::string> {
    auto it = j.find(key);
    if (it == j.end() || !it->is_string()) return std::nullopt;
    return it->get<std::string>();
  };
  auto get_bool = [&](const char* key) {
    auto it = j.find(key);
    return it != j.end() && it->is_boolean() && it->get<bool>();
  };
  m.unk_token_ = get_string("unk_token");
  m.continuing_subword_prefix_ = get_string("continuing_subword_prefix").value_or("");
  m.end_of_word_suffix_ = get_string("end_of_word_suffix").value_or("");
  m.fuse_unk_ = get_bool("fuse_unk");
  m.byte_fallback_ = get_bool("byte_fallback");
  m.ignore_merges_ = get_bool("ignore_merges");

  if (!j.contains("vocab") || !j["vocab"].is_object()) {
    return Status::Error("BPE model: missing \"vocab\" object");
  }
  const auto& vocab = j["vocab"];
  m.vocab_.reserve(vocab.size());
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    if (!it.value().is_number_unsigned() || it.value().get<uint64_t>() > uint64_t(INT32_MAX)) {
      return Status::Errorf("vocab[{:?}]: id must be an integer in [0, 2^31)", it.key());
    }
    m.vocab_[it.key()] = int32_t(it.value().get<uint64_t>());
  }
  if (m.unk_token_ && !m.vocab_.count(*m.unk_token_)) {
    return Status::Errorf("unk_token {:?} is not in the vocabulary", *m.unk_token_);
  }

  if (!j.contains("merges")) return Status::Error("BPE model: missing \"merges\"");
  TERN_ASSIGN_OR_RETURN(auto merges, ParseMerges(j["merges"]));
  m.merges_.Reserve(merges.size());
  const size_t prefix_len = m.continuing_subword_prefix_.size();
  for (size_t i = 0; i < merges.size(); ++i) {
    const auto& [a, b] = merges[i];
    auto ia = m.vocab_.find(a);
    auto ib = m.vocab_.find(b);
    if (ia == m.vocab_.end() || ib == m.vocab_.end()) {
      return Status::Errorf("merges[{}]: token {:?} is not in the vocabulary", i,
                            ia == m.vocab_.end() ? a : b);
    }
    if (b.size() < prefix_len) return Status::Errorf("merges[{}]: token shorter than prefix", i);
    std::string joined = a + b.substr(prefix_len);
    auto im = m.vocab_.find(joined);
    if (im == m.vocab_.end()) {
      return Status::Errorf("merges[{}]: merged token {:?} is not in the vocabulary", i, joined);
    }
    m.merges_.Put(ia->second, ib->second, uint32_t(i), im->second);
  }

  if (byte_level && m.continuing_subword_prefix_.empty() && m.end_of_word_suffix_.empty()) {
    const auto& alphabet = ByteLevelAlphabet::Get();
    m.fast_bytes_ = true;
    for (int b = 0; b < 256; ++b) {
      auto it = m.vocab_.find(alphabet.ByteToUtf8(uint8_t(b)));
      if (it == m.vocab_.end()) {
        m.fast_bytes_ = false;
        break;
      }
      m.byte_id_[b] = it->second;
    }
    if (m.fast_bytes_ && m.ignore_merges_) {
      std::string raw;
      for (const auto& [token, id] : m.vocab_) {
        if (alphabet.Decode(token, &raw)) m.raw_vocab_.emplace(raw, id);
      }
    }
  }
  return m;
}

std::optional<int32_t> BpeModel::TokenToId(std::string_view token) const {
  auto it = vocab_.find(token);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

void BpeModel::Tokenize(std::string_view piece, std::vector<int32_t>* ids,
                        std::vector<int32_t>* scratch) const {
  // Single bytes are cheaper to look up than to cache.
  if (piece.size() < 2 || piece.size() > BpeCache::kMaxPiece || !fast_bytes_) {
    TokenizeUncached(piece, ids, scratch);
    return;
  }
  BpeCache& cache = BpeCache::ForThisThread();
  if (cache.Lookup(cache_owner_, piece, ids)) return;
  const size_t before = ids->size();
  TokenizeUncached(piece, ids, scratch);
  cache.Store(cache_owner_, piece, ids->data() + before, ids->size() - before);
}

void BpeModel::TokenizeUncached(std::string_view piece, std::vector<int32_t>* ids,
                                std::vector<int32_t>* scratch) const {
  if (piece.empty()) return;
  if (!fast_bytes_) {
    if (byte_level_) {
      TokenizeGeneric(ByteLevelAlphabet::Get().Encode(piece), ids, scratch);
    } else {
      TokenizeGeneric(piece, ids, scratch);
    }
    return;
  }
  if (ignore_merges_) {
    auto it = raw_vocab_.find(piece);
    if (it != raw_vocab_.end()) {
      ids->push_back(it->second);
      return;
    }
  }
  if (piece.size() == 1) {
    ids->push_back(byte_id_[uint8_t(piece[0])]);
    return;
  }
  scratch->resize(piece.size());
  for (size_t i = 0; i < piece.size(); ++i) (*scratch)[i] = byte_id_[uint8_t(piece[i])];
  MergeWordFast(merges_, scratch);
  ids->insert(ids->end(), scratch->begin(), scratch->end());
}

// Hugging Face's BPE::merge_word, character by character, for vocabularies
// that are not byte-complete or use a subword prefix or suffix.
void BpeModel::TokenizeGeneric(std::string_view word, std::vector<int32_t>* ids,
                               std::vector<int32_t>* scratch) const {
  if (ignore_merges_) {
    if (auto id = TokenToId(word)) {
      ids->push_back(*id);
      return;
    }
  }
  scratch->clear();
  // A pending unknown-token run: Hugging Face adds it when the next known
  // character (or the end) arrives, after any byte-fallback tokens between.
  bool unk_pending = false;
  const int32_t unk_id = unk_token_ ? vocab_.find(*unk_token_)->second : -1;
  std::string s;
  size_t pos = 0;
  while (pos < word.size()) {
    const size_t start = pos;
    NextCodePoint(word, &pos);
    s.assign(word.substr(start, pos - start));
    if (start > 0) s.insert(0, continuing_subword_prefix_);
    if (pos == word.size()) s += end_of_word_suffix_;
    if (auto it = vocab_.find(s); it != vocab_.end()) {
      if (unk_pending) scratch->push_back(unk_id);
      unk_pending = false;
      scratch->push_back(it->second);
      continue;
    }
    if (byte_fallback_) {
      std::vector<int32_t> bytes;
      for (unsigned char b : s) {
        auto it = vocab_.find(fmt::format("<0x{:02X}>", b));
        if (it == vocab_.end()) break;
        bytes.push_back(it->second);
      }
      if (bytes.size() == s.size()) {
        scratch->insert(scratch->end(), bytes.begin(), bytes.end());
        continue;
      }
    }
    if (unk_id >= 0) {
      if (unk_pending && !fuse_unk_) scratch->push_back(unk_id);
      unk_pending = true;
    }
  }
  if (unk_pending) scratch->push_back(unk_id);
  MergeWordFast(merges_, scratch);
  ids->insert(ids->end(), scratch->begin(), scratch->end());
}

}  // namespace tern::tok
