#include "tokenize/pre_tokenizer.h"

#include <algorithm>

#include <nlohmann/json.hpp>
#include <utf8proc.h>

#include "tokenize/utf8.h"

namespace tern::tok {
namespace {

// GPT-2's pattern, used by ByteLevel when use_regex is true.
constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

const Regex& Gpt2Regex() {
  static const Regex* regex = [] {
    auto r = Regex::Compile(kGpt2Pattern);
    return new Regex(std::move(r).value());  // a constant pattern: compiles
  }();
  return *regex;
}

struct Marked {
  Piece piece;
  bool is_match;
};

// The per-thread scratch vectors below are kept between calls (no allocation
// per piece), except past 64k elements: a 32 MB prompt of digits grows them to
// ~256 MB, which a worker thread would otherwise hold for good.
template <class T>
struct ReleaseIfLarge {
  std::vector<T>& v;
  explicit ReleaseIfLarge(std::vector<T>& vec) : v(vec) {}
  ~ReleaseIfLarge() {
    if (v.capacity() > (size_t(1) << 16)) std::vector<T>().swap(v);
  }
};

// Hugging Face NormalizedString::split: turns the (offsets, is_match) list
// that covers the text into pieces according to the behaviour, dropping
// empty ones.
void EmitSplits(const std::vector<Marked>& marked, SplitBehavior behavior,
                std::vector<Piece>* out) {
  std::vector<Marked> acc;
  const std::vector<Marked>* splits = &marked;
  switch (behavior) {
    case SplitBehavior::kIsolated:
      break;
    case SplitBehavior::kRemoved:
      for (const Marked& m : marked) {
        if (!m.is_match && m.piece.end > m.piece.begin) out->push_back(m.piece);
      }
      return;
    case SplitBehavior::kContiguous: {
      bool previous_match = false;
      for (const Marked& m : marked) {
        if (m.is_match == previous_match && !acc.empty()) {
          acc.back().piece.end = m.piece.end;
        } else {
          acc.push_back({m.piece, false});
        }
        previous_match = m.is_match;
      }
      splits = &acc;
      break;
    }
    case SplitBehavior::kMergedWithPrevious: {
      bool previous_match = false;
      for (const Marked& m : marked) {
        if (m.is_match && !previous_match && !acc.empty()) {
          acc.back().piece.end = m.piece.end;
        } else {
          acc.push_back({m.piece, false});
        }
        previous_match = m.is_match;
      }
      splits = &acc;
      break;
    }
    case SplitBehavior::kMergedWithNext: {
      bool previous_match = false;
      for (auto it = marked.rbegin(); it != marked.rend(); ++it) {
        if (it->is_match && !previous_match && !acc.empty()) {
          acc.back().piece.begin = it->piece.begin;
        } else {
          acc.push_back({it->piece, false});
        }
        previous_match = it->is_match;
      }
      std::reverse(acc.begin(), acc.end());
      splits = &acc;
      break;
    }
  }
  for (const Marked& m : *splits) {
    if (m.piece.end > m.piece.begin) out->push_back(m.piece);
  }
}

Result<SplitBehavior> ParseBehavior(const nlohmann::json& j) {
  if (!j.is_string()) return Status::Error("Split: \"behavior\" must be a string");
  const std::string b = j.get<std::string>();
  if (b == "Removed") return SplitBehavior::kRemoved;
  if (b == "Isolated") return SplitBehavior::kIsolated;
  if (b == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (b == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (b == "Contiguous") return SplitBehavior::kContiguous;
  return Status::Errorf("Split: unknown behavior {:?}", b);
}

bool GetBool(const nlohmann::json& j, const char* key, bool fallback) {
  auto it = j.find(key);
  return (it != j.end() && it->is_boolean()) ? it->get<bool>() : fallback;
}

// Rust's char::is_numeric: general categories Nd, Nl, No.
bool IsNumeric(char32_t cp) {
  if (cp < 0x80) return cp >= '0' && cp <= '9';
  auto cat = utf8proc_category(utf8proc_int32_t(cp));
  return cat == UTF8PROC_CATEGORY_ND || cat == UTF8PROC_CATEGORY_NL ||
         cat == UTF8PROC_CATEGORY_NO;
}

}  // namespace

Status PreTokenizer::AppendSteps(const nlohmann::json& j, std::vector<Step>* steps) {
  if (j.is_null()) return Status::Ok();
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string()) {
    return Status::Error("pre_tokenizer: expected an object with a string \"type\"");
  }
  const std::string type = j["type"].get<std::string>();
  if (type == "Sequence") {
    if (!j.contains("pretokenizers") || !j["pretokenizers"].is_array()) {
      return Status::Error("pre_tokenizer Sequence: missing \"pretokenizers\" array");
    }
    for (const auto& sub : j["pretokenizers"]) TERN_RETURN_IF_ERROR(AppendSteps(sub, steps));
    return Status::Ok();
  }
  if (type == "Split") {
    SplitStep step;
    if (!j.contains("pattern") || !j["pattern"].is_object()) {
      return Status::Error("Split: missing \"pattern\" object");
    }
    const auto& pat = j["pattern"];
    if (pat.contains("Regex") && pat["Regex"].is_string()) {
      auto r = Regex::Compile(pat["Regex"].get<std::string>());
      if (!r.ok()) return r.status().WithContext("Split pattern");
      step.regex = std::move(r).value();
    } else if (pat.contains("String") && pat["String"].is_string()) {
      auto r = Regex::Literal(pat["String"].get<std::string>());
      if (!r.ok()) return r.status().WithContext("Split pattern");
      step.regex = std::move(r).value();
    } else {
      return Status::Error("Split: \"pattern\" must hold a string \"Regex\" or \"String\"");
    }
    if (!j.contains("behavior")) return Status::Error("Split: missing \"behavior\"");
    TERN_ASSIGN_OR_RETURN(step.behavior, ParseBehavior(j["behavior"]));
    step.invert = GetBool(j, "invert", false);
    steps->push_back(std::move(step));
    return Status::Ok();
  }
  if (type == "Digits") {
    steps->push_back(DigitsStep{.individual_digits = GetBool(j, "individual_digits", false)});
    return Status::Ok();
  }
  if (type == "ByteLevel") {
    steps->push_back(ByteLevelStep{.add_prefix_space = GetBool(j, "add_prefix_space", true),
                                   .use_regex = GetBool(j, "use_regex", true)});
    return Status::Ok();
  }
  return Status::Errorf("pre_tokenizer type {:?} is not supported", type);
}

Result<PreTokenizer> PreTokenizer::FromJson(const nlohmann::json& j) {
  PreTokenizer p;
  TERN_RETURN_IF_ERROR(AppendSteps(j, &p.steps_));
  for (size_t i = 0; i < p.steps_.size(); ++i) {
    if (std::holds_alternative<ByteLevelStep>(p.steps_[i])) {
      if (i + 1 != p.steps_.size()) {
        return Status::Error("pre_tokenizer: ByteLevel must be the last step");
      }
      p.byte_level_ = true;
    }
  }
  return p;
}

Status PreTokenizer::ApplyStep(const Step& step, std::string* arena, Piece piece,
                               std::vector<Piece>* out) {
  if (const auto* bl = std::get_if<ByteLevelStep>(&step)) {
    if (bl->add_prefix_space && (*arena)[piece.begin] != ' ') {
      const uint32_t begin = uint32_t(arena->size());
      arena->push_back(' ');
      arena->append(*arena, piece.begin, piece.end - piece.begin);
      piece = Piece{begin, uint32_t(arena->size())};
    }
    if (!bl->use_regex) {
      out->push_back(piece);
      return Status::Ok();
    }
    thread_local std::vector<MatchSpan> matches;
    thread_local std::vector<Marked> marked;
    const ReleaseIfLarge keep_matches(matches);
    const ReleaseIfLarge keep_marked(marked);
    matches.clear();
    std::string_view text(arena->data() + piece.begin, piece.end - piece.begin);
    TERN_RETURN_IF_ERROR(Gpt2Regex().FindAll(text, &matches));
    marked.clear();
    uint32_t prev = 0;
    for (auto [s, e] : matches) {
      if (prev != s) marked.push_back({{piece.begin + prev, piece.begin + s}, false});
      marked.push_back({{piece.begin + s, piece.begin + e}, true});
      prev = e;
    }
    if (prev != text.size()) marked.push_back({{piece.begin + prev, piece.end}, false});
    EmitSplits(marked, SplitBehavior::kIsolated, out);
    return Status::Ok();
  }

  thread_local std::vector<Marked> marked;
  const ReleaseIfLarge keep_marked(marked);
  marked.clear();
  std::string_view text(arena->data() + piece.begin, piece.end - piece.begin);
  if (const auto* split = std::get_if<SplitStep>(&step)) {
    thread_local std::vector<MatchSpan> matches;
    const ReleaseIfLarge keep_matches(matches);
    matches.clear();
    TERN_RETURN_IF_ERROR(split->regex.FindAll(text, &matches));
    if (split->behavior == SplitBehavior::kIsolated) {
      // Every match and every gap is a piece (the common case, kept direct).
      uint32_t prev = 0;
      for (auto [s, e] : matches) {
        if (prev != s) out->push_back({piece.begin + prev, piece.begin + s});
        if (e != s) out->push_back({piece.begin + s, piece.begin + e});
        prev = e;
      }
      if (prev != text.size()) out->push_back({piece.begin + prev, piece.end});
      return Status::Ok();
    }
    uint32_t prev = 0;
    for (auto [s, e] : matches) {
      if (prev != s) marked.push_back({{piece.begin + prev, piece.begin + s}, split->invert});
      marked.push_back({{piece.begin + s, piece.begin + e}, !split->invert});
      prev = e;
    }
    if (prev != text.size()) marked.push_back({{piece.begin + prev, piece.end}, split->invert});
    EmitSplits(marked, split->behavior, out);
    return Status::Ok();
  }
  const auto& digits = std::get<DigitsStep>(step);
  // The char-predicate pattern of Hugging Face: each numeric character is a
  // match, the text between them a non-match.
  uint32_t last = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t at = pos;
    const char32_t cp = NextCodePoint(text, &pos);
    if (IsNumeric(cp)) {
      if (last < at) marked.push_back({{piece.begin + last, piece.begin + uint32_t(at)}, false});
      marked.push_back({{piece.begin + uint32_t(at), piece.begin + uint32_t(pos)}, true});
      last = uint32_t(pos);
    }
  }
  if (last < text.size()) marked.push_back({{piece.begin + last, piece.end}, false});
  EmitSplits(marked, digits.individual_digits ? SplitBehavior::kIsolated
                                              : SplitBehavior::kContiguous,
             out);
  return Status::Ok();
}

Status PreTokenizer::Split(std::string* arena, Piece whole, std::vector<Piece>* pieces,
                           std::vector<Piece>* scratch) const {
  if (whole.end <= whole.begin) return Status::Ok();
  if (steps_.empty()) {
    pieces->push_back(whole);
    return Status::Ok();
  }
  // Each step maps the current list to the next; the last writes *pieces.
  std::vector<Piece> current{whole};
  for (size_t s = 0; s < steps_.size(); ++s) {
    const bool last = s + 1 == steps_.size();
    std::vector<Piece>* out = last ? pieces : scratch;
    if (!last) scratch->clear();
    for (const Piece& p : current) TERN_RETURN_IF_ERROR(ApplyStep(steps_[s], arena, p, out));
    if (!last) current.swap(*scratch);
  }
  return Status::Ok();
}

}  // namespace tern::tok
