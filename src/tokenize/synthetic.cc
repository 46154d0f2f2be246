#include "tokenize/synthetic.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tokenize/byte_level.h"
#include "tokenize/regex.h"
#include "tokenize/synthetic_data.h"

namespace tern {
namespace {

constexpr std::string_view kQwen3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

struct AddedSpec {
  const char* content;
  bool special;
};
// Qwen3's relative order.
constexpr AddedSpec kAdded[] = {
    {"<|endoftext|>", true}, {"<|im_start|>", true},     {"<|im_end|>", true},
    {"<tool_call>", false},  {"</tool_call>", false},    {"<tool_response>", false},
    {"</tool_response>", false}, {"<think>", false},     {"</think>", false},
};
constexpr int32_t kNumAdded = int32_t(std::size(kAdded));

struct Word {
  std::vector<int32_t> symbols;
  int64_t count = 0;
};

// The corpus split as the Qwen3 pre-tokenizer splits it (ASCII text: NFC is
// the identity), counted per distinct piece, in a deterministic order.
std::vector<Word> CorpusWords() {
  const std::string_view text = tok::kSyntheticCorpus;
  std::vector<tok::MatchSpan> matches;
  auto regex = tok::Regex::Compile(kQwen3Pattern);
  std::map<std::string, int64_t> counts;
  if (regex.ok() && regex->FindAll(text, &matches).ok()) {
    uint32_t prev = 0;
    for (auto [s, e] : matches) {
      if (s > prev) ++counts[std::string(text.substr(prev, s - prev))];
      ++counts[std::string(text.substr(s, e - s))];
      prev = e;
    }
    if (prev < text.size()) ++counts[std::string(text.substr(prev))];
  }
  std::vector<Word> words;
  for (const auto& [piece, count] : counts) {
    Word w;
    w.count = count;
    for (unsigned char b : piece) w.symbols.push_back(b);  // byte ids, remapped below
    words.push_back(std::move(w));
  }
  return words;
}

// GPT-2's byte order: the bytes shown as themselves first, then the others.
std::vector<uint8_t> ByteOrder() {
  std::vector<uint8_t> order;
  const auto& alphabet = tok::ByteLevelAlphabet::Get();
  for (int b = 0; b < 256; ++b) {
    if (alphabet.ByteToCodePoint(uint8_t(b)) == char32_t(b)) order.push_back(uint8_t(b));
  }
  for (int b = 0; b < 256; ++b) {
    if (alphabet.ByteToCodePoint(uint8_t(b)) != char32_t(b)) order.push_back(uint8_t(b));
  }
  return order;
}

struct PairHash {
  size_t operator()(uint64_t k) const { return size_t(k * 0x9E3779B97F4A7C15ull); }
};

}  // namespace

std::string MakeSyntheticTokenizerJson(int32_t vocab_size_hint) {
  const int32_t total = std::max<int32_t>(vocab_size_hint, 256 + kNumAdded);
  const int32_t model_size = total - kNumAdded;
  const auto& alphabet = tok::ByteLevelAlphabet::Get();

  std::vector<std::string> tokens;  // model vocabulary by id
  std::unordered_map<std::string, int32_t> token_ids;
  int32_t byte_to_id[256];
  for (uint8_t b : ByteOrder()) {
    byte_to_id[b] = int32_t(tokens.size());
    token_ids[std::string(alphabet.ByteToUtf8(b))] = int32_t(tokens.size());
    tokens.emplace_back(alphabet.ByteToUtf8(b));
  }
  std::vector<Word> words = CorpusWords();
  for (Word& w : words) {
    for (int32_t& s : w.symbols) s = byte_to_id[s];
  }

  // BPE training: merge the most frequent adjacent pair (ties: smallest ids)
  // until the vocabulary is full or every word is one token. Pair counts are
  // kept up to date for the words a merge touches only.
  std::vector<std::pair<std::string, std::string>> merges;
  std::unordered_map<uint64_t, int64_t, PairHash> pair_counts;
  std::unordered_map<uint64_t, std::vector<size_t>, PairHash> pair_words;  // may repeat
  auto key_of = [](int32_t a, int32_t b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); };
  auto count_word = [&](size_t wi, int64_t sign) {
    const Word& w = words[wi];
    for (size_t i = 0; i + 1 < w.symbols.size(); ++i) {
      const uint64_t key = key_of(w.symbols[i], w.symbols[i + 1]);
      pair_counts[key] += sign * w.count;
      if (sign > 0) pair_words[key].push_back(wi);
    }
  };
  for (size_t wi = 0; wi < words.size(); ++wi) count_word(wi, +1);
  while (int32_t(tokens.size()) < model_size) {
    uint64_t best = 0;
    int64_t best_count = 0;
    for (const auto& [key, count] : pair_counts) {
      if (count > best_count || (count == best_count && count > 0 && key < best)) {
        best = key;
        best_count = count;
      }
    }
    if (best_count <= 0) break;
    const int32_t a = int32_t(best >> 32), b = int32_t(uint32_t(best));
    const std::string joined = tokens[size_t(a)] + tokens[size_t(b)];
    int32_t merged;
    if (auto it = token_ids.find(joined); it != token_ids.end()) {
      merged = it->second;
    } else {
      merged = int32_t(tokens.size());
      token_ids[joined] = merged;
      tokens.push_back(joined);
    }
    merges.emplace_back(tokens[size_t(a)], tokens[size_t(b)]);
    std::vector<size_t> touched = std::move(pair_words[best]);
    pair_words.erase(best);
    std::sort(touched.begin(), touched.end());
    touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
    for (size_t wi : touched) {
      count_word(wi, -1);
      std::vector<int32_t>& s = words[wi].symbols;
      size_t out = 0;
      for (size_t i = 0; i < s.size(); ++i) {
        if (i + 1 < s.size() && s[i] == a && s[i + 1] == b) {
          s[out++] = merged;
          ++i;
        } else {
          s[out++] = s[i];
        }
      }
      s.resize(out);
      count_word(wi, +1);
    }
    for (auto it = pair_counts.begin(); it != pair_counts.end();) {
      it = it->second == 0 ? pair_counts.erase(it) : std::next(it);
    }
  }
  for (int32_t n = 0; int32_t(tokens.size()) < model_size; ++n) {
    tokens.push_back(fmt::format("<|synthetic_filler_{}|>", n));
  }

  using ojson = nlohmann::ordered_json;
  ojson vocab = ojson::object();
  for (size_t id = 0; id < tokens.size(); ++id) vocab[tokens[id]] = id;
  ojson merge_list = ojson::array();
  for (const auto& [a, b] : merges) merge_list.push_back(ojson::array({a, b}));
  ojson added = ojson::array();
  for (int32_t i = 0; i < kNumAdded; ++i) {
    added.push_back(ojson{{"id", model_size + i},
                          {"content", kAdded[i].content},
                          {"single_word", false},
                          {"lstrip", false},
                          {"rstrip", false},
                          {"normalized", false},
                          {"special", kAdded[i].special}});
  }
  const ojson byte_level = {{"type", "ByteLevel"},
                            {"add_prefix_space", false},
                            {"trim_offsets", false},
                            {"use_regex", false}};
  ojson root = ojson::object();
  root["version"] = "1.0";
  root["truncation"] = nullptr;
  root["padding"] = nullptr;
  root["added_tokens"] = added;
  root["normalizer"] = {{"type", "NFC"}};
  root["pre_tokenizer"] = {
      {"type", "Sequence"},
      {"pretokenizers",
       ojson::array({ojson{{"type", "Split"},
                           {"pattern", {{"Regex", std::string(kQwen3Pattern)}}},
                           {"behavior", "Isolated"},
                           {"invert", false}},
                     byte_level})}};
  root["post_processor"] = byte_level;
  root["decoder"] = byte_level;
  root["model"] = {{"type", "BPE"},
                   {"dropout", nullptr},
                   {"unk_token", nullptr},
                   {"continuing_subword_prefix", ""},
                   {"end_of_word_suffix", ""},
                   {"fuse_unk", false},
                   {"byte_fallback", false},
                   {"ignore_merges", false},
                   {"vocab", vocab},
                   {"merges", merge_list}};
  return root.dump(2) + "\n";
}

std::string SyntheticTokenizerConfigJson(SyntheticChatTemplate chat_template) {
  using ojson = nlohmann::ordered_json;
  ojson c = ojson::object();
  c["add_bos_token"] = false;
  c["add_prefix_space"] = false;
  c["bos_token"] = nullptr;
  c["chat_template"] =
      chat_template == SyntheticChatTemplate::kQwen35 ? tok::kQwen35ChatTemplate : tok::kQwen3ChatTemplate;
  c["clean_up_tokenization_spaces"] = false;
  c["eos_token"] = "<|im_end|>";
  c["errors"] = "replace";
  c["model_max_length"] = 32768;
  c["pad_token"] = "<|endoftext|>";
  c["split_special_tokens"] = false;
  c["tokenizer_class"] = "Qwen2Tokenizer";
  c["unk_token"] = nullptr;
  return c.dump(2) + "\n";
}

}  // namespace tern
