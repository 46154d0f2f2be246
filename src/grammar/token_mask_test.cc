// Token masks against a brute-force reference: a token is allowed exactly
// when a fresh matcher fed the accepted text so far plus the token's bytes
// (AcceptBytes, no precomputed mask involved) still has a live position.
// Covers tokens that span grammar boundaries, byte-level tokens that are
// part of a UTF-8 character, special tokens and EOS, with a small vocabulary
// and with the real Qwen3 tokenizer.
#include <algorithm>
#include <chrono>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "grammar/test_util.h"
#include "tokenize/byte_level.h"
#include "tokenize/test_util.h"
#include "tokenize/tokenizer.h"

namespace tern::grammar {
namespace {

bool Bit(const std::vector<uint64_t>& m, int32_t id) { return (m[size_t(id) >> 6] >> (id & 63)) & 1; }

// The reference answer for one token after `text`.
bool BruteAllowed(const std::shared_ptr<const CompiledGrammar>& g, const std::string& text, int32_t id,
                  const std::vector<int32_t>& stops) {
  GrammarMatcher m(g, stops);
  if (!m.AcceptBytes(text)) return false;
  const TokenVocabulary& v = g->vocab();
  if (std::find(stops.begin(), stops.end(), id) != stops.end()) return m.CanTerminate();
  if (v.special(id) || v.bytes(id).empty()) return false;
  return m.AcceptBytes(v.bytes(id));
}

// Walks `steps` random allowed tokens, checking every mask against the reference on `ids`.
void RandomWalk(const std::shared_ptr<const CompiledGrammar>& g, const std::vector<int32_t>& stops, int steps,
                uint32_t seed, const std::vector<int32_t>& ids) {
  std::mt19937 rng(seed);
  GrammarMatcher m(g, stops);
  std::string text;
  std::vector<uint64_t> mask(g->vocab().mask_words());
  for (int step = 0; step < steps && !m.IsTerminated(); ++step) {
    m.FillNextTokenMask(mask);
    std::vector<int32_t> allowed;
    for (int32_t id = 0; id < g->vocab().size(); ++id)
      if (Bit(mask, id)) allowed.push_back(id);
    for (int32_t id : ids) ASSERT_EQ(Bit(mask, id), BruteAllowed(g, text, id, stops)) << "token " << id << " after '" << text << "'";
    // Every allowed token when few, else a random 500 of them.
    for (size_t k = 0; k < std::min<size_t>(allowed.size(), 500); ++k) {
      const int32_t id = allowed.size() <= 500 ? allowed[k] : allowed[rng() % allowed.size()];
      ASSERT_TRUE(BruteAllowed(g, text, id, stops)) << "token " << id << " after '" << text << "'";
    }
    ASSERT_FALSE(allowed.empty()) << "dead end after '" << text << "'";
    // Prefer ending late: stop tokens only after a while.
    int32_t pick = allowed[rng() % allowed.size()];
    if (step < steps / 2)
      for (int tries = 0; tries < 8 && std::find(stops.begin(), stops.end(), pick) != stops.end(); ++tries)
        pick = allowed[rng() % allowed.size()];
    ASSERT_TRUE(m.AcceptToken(pick));
    if (!m.IsTerminated()) text += g->vocab().bytes(pick);
  }
}

TEST(TokenMask, SmallVocabularyBoundariesAndUtf8) {
  // 256 byte tokens, multi-byte tokens crossing grammar boundaries, two halves
  // of "你" (E4 BD A0), an EOS (special) and another special token.
  std::vector<std::string> extra = {"\":", "\",\"", "\"}", "{\"", "ab", "\":\"", "1,", "},{", "\xe4", "\xbd\xa0",
                                    "\xe4\xbd", "\xa0\"", "<eos>", "<|im_start|>", "null}", "true", "]}"};
  const int32_t eos = 256 + 12, other_special = 256 + 13;
  auto vocab = testing::ByteVocab(extra, {eos, other_special});
  std::vector<int32_t> all;
  for (int32_t id = 0; id < vocab->size(); ++id) all.push_back(id);
  for (const char* schema : {
           R"({"type":"object","properties":{"ab":{"type":"string","maxLength":3},"n":{"type":["integer","null"]},
               "l":{"type":"array","items":{"type":"object","properties":{"x":{"type":"boolean"}}}}},"required":["ab","l"]})",
           R"({"type":"array","items":{"anyOf":[{"type":"string","pattern":"^[你a]+$"},{"type":"integer","minimum":-3,"maximum":12}]},"minItems":1})"}) {
    auto g = testing::CompileFor({.kind = ConstraintKind::kJsonSchema, .text = schema}, vocab);
    ASSERT_TRUE(g.ok()) << g.status().message();
    for (uint32_t seed = 0; seed < 20; ++seed) RandomWalk(*g, {eos}, 60, seed, all);
  }
  auto re = testing::CompileFor({.kind = ConstraintKind::kRegex, .text = "(你|ab)+[0-9]?"}, vocab);
  ASSERT_TRUE(re.ok());
  GrammarMatcher m(*re, {eos});
  std::vector<uint64_t> mask(vocab->mask_words());
  m.FillNextTokenMask(mask);
  EXPECT_TRUE(Bit(mask, 256 + 8));   // "\xe4": the start of 你
  EXPECT_TRUE(Bit(mask, 256 + 10));  // "\xe4\xbd"
  EXPECT_FALSE(Bit(mask, 256 + 9));  // "\xbd\xa0" cannot start a character
  EXPECT_FALSE(Bit(mask, eos));      // nothing matched yet
  EXPECT_FALSE(Bit(mask, other_special));
  ASSERT_TRUE(m.AcceptToken(256 + 8));
  m.FillNextTokenMask(mask);
  EXPECT_TRUE(Bit(mask, 256 + 9));
  EXPECT_TRUE(Bit(mask, 0xbd));
  EXPECT_FALSE(Bit(mask, 'a'));  // inside a character
  EXPECT_FALSE(m.AcceptToken('a'));
  ASSERT_TRUE(m.AcceptToken(256 + 9));
  m.FillNextTokenMask(mask);
  EXPECT_TRUE(Bit(mask, eos));
  EXPECT_TRUE(Bit(mask, '7'));
  ASSERT_TRUE(m.AcceptToken('7'));
  m.FillNextTokenMask(mask);
  for (int32_t id = 0; id < vocab->size(); ++id) EXPECT_EQ(Bit(mask, id), id == eos) << id;  // complete: EOS only
  EXPECT_FALSE(m.CanContinue());
  ASSERT_TRUE(m.AcceptToken(eos));
  EXPECT_TRUE(m.IsTerminated());
}

TEST(TokenMask, Qwen3Tokenizer) {
  const auto path = tok::testing::NpmTokenizerFile("qwen3", "tokenizer.json");
  TERN_REQUIRE_TEST_DATA(path, "the Qwen3 tokenizer (scripts/fetch-test-data.sh)");
  auto tok = Tokenizer::FromFile(*path);
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  auto vocab = TokenVocabulary::FromTokenizer(*tok, 151936);
  const int32_t eos = *tok->TokenToId("<|im_end|>");
  std::mt19937 rng(1);
  std::vector<int32_t> sample;  // a fixed random sample plus the tokens near the grammar's structure
  for (int i = 0; i < 1500; ++i) sample.push_back(int32_t(rng() % 151936));
  for (const char* t : {"\"", "\":", "\",", "\"}", "{\"", "},", "}", "]", "[", ",", "<think>", "</think>", "<tool_call>"})
    if (auto id = tok->TokenToId(tok::ByteLevelAlphabet::Get().Encode(t)); id) sample.push_back(*id);
  sample.push_back(eos);
  struct Case {
    ConstraintKind kind;
    const char* text;
  };
  for (const Case& c : {Case{ConstraintKind::kJsonSchema,
                             R"({"type":"object","properties":{"city":{"type":"string"},"temp":{"type":"number","minimum":-50,"maximum":60},
                                 "when":{"type":"string","format":"date"},"ok":{"type":"boolean"}},"required":["city","temp"]})"},
                        Case{ConstraintKind::kRegex, R"(\d{3}-[A-Z][a-z]+( [A-Z][a-z]+)*)"},
                        Case{ConstraintKind::kEbnf, "root ::= \"(\" expr \")\"\nexpr ::= term ((\"+\" | \"-\") term)*\n"
                                                    "term ::= [0-9]+ | \"(\" expr \")\""}}) {
    auto g = testing::CompileFor({.kind = c.kind, .text = c.text}, vocab);
    ASSERT_TRUE(g.ok()) << g.status().message();
    for (uint32_t seed = 0; seed < 2; ++seed) RandomWalk(*g, {eos}, 20, seed, sample);
  }
}

}  // namespace
}  // namespace tern::grammar

namespace tern::grammar {
namespace {

std::shared_ptr<const TokenVocabulary> Qwen3Vocabulary() {
  const auto path = tok::testing::NpmTokenizerFile("qwen3", "tokenizer.json");
  if (!path) return nullptr;
  auto tok = Tokenizer::FromFile(*path);
  if (!tok.ok()) return nullptr;
  return TokenVocabulary::FromTokenizer(*tok, 151936);
}

std::vector<int32_t> AcceptedIds(const StateMask& m) {
  std::vector<int32_t> ids = m.accepted;
  for (size_t w = 0; w < m.accepted_bits.size(); ++w)
    for (int b = 0; b < 64; ++b)
      if ((m.accepted_bits[w] >> b) & 1) ids.push_back(int32_t(w * 64 + size_t(b)));
  std::sort(ids.begin(), ids.end());
  return ids;
}

// The walk's shortcuts (one transition per trie node while a single
// position stays inside its rule; whole subtrees accepted where every byte
// below loops) against the plain walk that advances every trie node through
// the stack runner, for every state of grammars with counted strings,
// patterns, formats, numbers, nested objects and a recursive EBNF, on the
// Qwen3 vocabulary.
TEST(TokenMask, ShortcutsAgreeWithThePlainWalk) {
  auto vocab = Qwen3Vocabulary();
  TERN_REQUIRE_TEST_DATA(vocab, "the Qwen3 tokenizer (scripts/fetch-test-data.sh)");
  const ConstraintSpec specs[] = {
      {.kind = ConstraintKind::kJsonSchema,
       .text = R"({"type":"object","properties":{"id":{"type":"string","minLength":2,"maxLength":6},
                  "zip":{"type":"string","pattern":"^[0-9]{3}$"},"day":{"type":"string","format":"date"},
                  "n":{"type":"integer","minimum":-5,"maximum":120},"x":{"type":"number"},
                  "tags":{"type":"array","items":{"type":"string","maxLength":3},"maxItems":2}},
                  "required":["id","n"]})"},
      {.kind = ConstraintKind::kRegex, .text = R"([a-z]{2,7}(\.[a-z]+)*@[a-z]+\.(com|org)|"[^"]{0,5}")"},
      {.kind = ConstraintKind::kEbnf,
       .text = "root ::= expr\nexpr ::= term ((\" + \" | \"*\") term)*\nterm ::= [a-z] [a-z0-9_]{0,4} | [0-9]+ | "
               "\"(\" expr \")\""},
  };
  for (const ConstraintSpec& spec : specs) {
    auto g = testing::CompileFor(spec, vocab);
    ASSERT_TRUE(g.ok()) << g.status().message();
    int checked = 0;
    for (int32_t s = 0; s < (*g)->automaton().num_states(); ++s) {
      if (!(*g)->automaton().HasBytes(s)) continue;
      const StateMask fast = (*g)->ClassifyForTest(s, true), plain = (*g)->ClassifyForTest(s, false);
      ASSERT_EQ(AcceptedIds(fast), AcceptedIds(plain)) << spec.text << " state " << s;
      ASSERT_EQ(fast.uncertain, plain.uncertain) << spec.text << " state " << s;
      ++checked;
    }
    EXPECT_GT(checked, 10) << spec.text;
  }
}

// States whose masks are equal share one: [ -~]{0,200} is 201 states that,
// but for the last ~90 (where the tokens longer than the characters left are
// refused), allow the same tokens; a dense mask of the Qwen3 vocabulary is
// 19 KB, so 201 of them held apart would be ~3.8 MB ([ -~]{0,99999}: ~1.9 GB).
// Each state's mask is its own classification still.
TEST(TokenMask, EqualMasksAreHeldOnce) {
  auto vocab = Qwen3Vocabulary();
  TERN_REQUIRE_TEST_DATA(vocab, "the Qwen3 tokenizer (scripts/fetch-test-data.sh)");
  GrammarCompiler compiler(vocab, {.eager_mask_cpu = std::chrono::minutes(5), .background_masks = false});
  auto g = compiler.Compile({.kind = ConstraintKind::kRegex, .text = "[ -~]{0,200}"});
  ASSERT_TRUE(g.ok()) << g.status().message();
  ASSERT_EQ((*g)->masks_ready(), (*g)->masks_total());
  ASSERT_GE((*g)->masks_total(), 200);
  const size_t dense = vocab->mask_words() * 8;
  EXPECT_LT((*g)->memory_bytes(), 150 * dense);  // ~91 distinct masks
  for (int32_t s = 0; s < (*g)->automaton().num_states(); s += 13) {
    if (!(*g)->automaton().HasBytes(s)) continue;
    const StateMask fresh = (*g)->ClassifyForTest(s, true);
    StateMask spill;
    ASSERT_EQ((*g)->mask(s, spill), fresh) << "state " << s;
  }
}

// A grammar compiled with no eager budget and the background worker: every
// mask gets computed without a matcher asking, and each equals a fresh
// classification of its state.
TEST(TokenMask, BackgroundWorkerComputesTheRest) {
  auto vocab = Qwen3Vocabulary();
  TERN_REQUIRE_TEST_DATA(vocab, "the Qwen3 tokenizer (scripts/fetch-test-data.sh)");
  GrammarCompiler compiler(vocab, {.eager_mask_cpu = std::chrono::milliseconds(0), .background_masks = true});
  auto g = compiler.Compile({.kind = ConstraintKind::kJsonSchema,
                             .text = R"({"type":"object","properties":{"name":{"type":"string","maxLength":12}}})"});
  ASSERT_TRUE(g.ok()) << g.status().message();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(3);
  while ((*g)->masks_ready() < (*g)->masks_total() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_EQ((*g)->masks_ready(), (*g)->masks_total());
  EXPECT_GT((*g)->masks_total(), 12);
  for (int32_t s = 0; s < (*g)->automaton().num_states(); ++s) {
    if (!(*g)->automaton().HasBytes(s)) continue;
    const StateMask fresh = (*g)->ClassifyForTest(s, true);
    StateMask spill;
    EXPECT_EQ(AcceptedIds((*g)->mask(s, spill)), AcceptedIds(fresh)) << "state " << s;
    EXPECT_EQ((*g)->mask(s, spill).uncertain, fresh.uncertain) << "state " << s;
  }
}

// A regex of negated classes, one per state ([^e][^k][^a]...): every state
// allows a different set of tokens, so no two masks are shared (with the
// Qwen3 vocabulary ~1 KB each; 10,000 classes are 190,000 states).
std::string NegatedClasses(int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string re;
  for (int i = 0; i < n; ++i) re += std::string("[^") + char('a' + rng() % 26) + "]";
  return re;
}

// Past its budget a grammar stores no more masks: the masks it computes for
// matchers are theirs alone (spilled), and still exact.
TEST(TokenMask, MasksPastTheMemoryBudgetAreSpilledAndExact) {
  std::vector<std::string> extra;
  for (char a = 'a'; a <= 'z'; ++a)
    for (char b : {'a', 'e', 'k', 'z'}) extra.push_back(std::string{a, b});
  extra.push_back("<eos>");
  const int32_t eos = int32_t(256 + extra.size() - 1);
  auto vocab = testing::ByteVocab(extra, {eos});
  auto ast = ConstraintToAst({.kind = ConstraintKind::kRegex, .text = NegatedClasses(60, 1)});
  ASSERT_TRUE(ast.ok());
  auto a = Automaton::Build(*ast);
  ASSERT_TRUE(a.ok());
  const size_t budget = 3 * (vocab->mask_words() * 8 + sizeof(StateMask));  // about three dense masks
  auto g = CompiledGrammar::Create(std::move(*a), vocab, std::chrono::nanoseconds::max(), false, budget);
  EXPECT_LE(g->memory_bytes(), budget);
  EXPECT_GT(g->memory_bytes(), 0u);
  EXPECT_LT(g->masks_ready(), g->masks_total() / 4);
  std::vector<int32_t> all;
  for (int32_t id = 0; id < vocab->size(); ++id) all.push_back(id);
  for (uint32_t seed = 0; seed < 4; ++seed) RandomWalk(g, {eos}, 40, seed, all);
  EXPECT_LE(g->memory_bytes(), budget);  // the walks' masks were not kept
}

// The process's budget holds across grammars: past it, new grammars store
// nothing, and the compiler evicts the least recently used ones that no
// request holds.
TEST(TokenMask, ProcessMaskBudgetHoldsAcrossGrammars) {
  auto vocab = Qwen3Vocabulary();
  TERN_REQUIRE_TEST_DATA(vocab, "the Qwen3 tokenizer (scripts/fetch-test-data.sh)");
  const size_t dense = vocab->mask_words() * 8 + sizeof(StateMask);
  const size_t saved = CompiledGrammar::ProcessMaskBudget();
  const size_t base = CompiledGrammar::ProcessMaskBytes();
  CompiledGrammar::SetProcessMaskBudget(base + 40 * dense);
  {
    GrammarCompiler compiler(vocab, {.eager_mask_cpu = std::chrono::minutes(5), .background_masks = false,
                                     .max_mask_bytes = 25 * dense});
    std::vector<std::shared_ptr<const CompiledGrammar>> held;
    for (uint32_t seed = 0; seed < 3; ++seed) {
      auto g = compiler.Compile({.kind = ConstraintKind::kRegex, .text = NegatedClasses(40, seed)});
      ASSERT_TRUE(g.ok()) << g.status().message();
      EXPECT_LE((*g)->memory_bytes(), 25 * dense);
      EXPECT_LE(CompiledGrammar::ProcessMaskBytes(), base + 40 * dense);
      held.push_back(*g);
    }
    EXPECT_GT(held[0]->memory_bytes(), 20 * dense);  // the first took its whole budget ...
    EXPECT_LT(held[1]->memory_bytes(), 16 * dense);  // ... the second what the process had left
    EXPECT_LT(held[2]->memory_bytes(), dense);  // (at most a small mask in what was left)
    // Masks the budget refused, computed for a matcher, are exact.
    for (int32_t s = 0; s < held[2]->automaton().num_states(); s += 7) {
      if (!held[2]->automaton().HasBytes(s)) continue;
      StateMask spill;
      EXPECT_EQ(held[2]->mask(s, spill), held[2]->ClassifyForTest(s, true)) << "state " << s;
    }
    // Grammars requests still hold stay cached past the budget (dropping them
    // frees nothing): the same objects come back, not second copies.
    for (uint32_t seed = 0; seed < 3; ++seed) {
      auto again = compiler.Compile({.kind = ConstraintKind::kRegex, .text = NegatedClasses(40, seed)});
      ASSERT_TRUE(again.ok());
      EXPECT_EQ(again->get(), held[seed].get()) << "grammar " << seed;
    }
    // Once they are let go, a new grammar past three quarters of the budget
    // drops the least recently used of them, and their masks are freed.
    held.clear();
    const size_t before = CompiledGrammar::ProcessMaskBytes();
    auto fresh = compiler.Compile({.kind = ConstraintKind::kRegex, .text = NegatedClasses(40, 7)});
    ASSERT_TRUE(fresh.ok());
    EXPECT_LT(CompiledGrammar::ProcessMaskBytes(), before);
  }
  EXPECT_EQ(CompiledGrammar::ProcessMaskBytes(), base);  // all freed with their grammars
  CompiledGrammar::SetProcessMaskBudget(saved);
}

// The compiler's cache is bounded in bytes as well as entries: a grammar's
// automaton, tables and masks count, and the least recently used go first.
TEST(TokenMask, CacheIsBoundedInBytes) {
  auto vocab = testing::ByteVocab({"ab", "ba", "<eos>"}, {258});
  std::vector<std::string> texts;
  for (uint32_t seed = 0; seed < 5; ++seed) texts.push_back(NegatedClasses(300, seed));
  GrammarCompiler probe(vocab, {.background_masks = false});
  auto one = probe.Compile({.kind = ConstraintKind::kRegex, .text = texts[0]});
  ASSERT_TRUE(one.ok());
  const size_t each = (*one)->total_bytes() + 2 * texts[0].size();
  EXPECT_GT((*one)->total_bytes(), (*one)->automaton().memory_bytes());
  EXPECT_GT((*one)->automaton().memory_bytes(), size_t(300 * 4 * 3));  // transitions of 300+ states
  // Room for about two and a half grammars. Nothing else holds them, so a
  // dropped one is freed (its weak_ptr expires).
  GrammarCompiler compiler(vocab, {.background_masks = false, .cache_bytes = each * 5 / 2});
  std::vector<std::weak_ptr<const CompiledGrammar>> built;
  for (const std::string& t : texts) {
    auto g = compiler.Compile({.kind = ConstraintKind::kRegex, .text = t});
    ASSERT_TRUE(g.ok());
    built.push_back(*g);
  }
  EXPECT_FALSE(built[4].expired());
  EXPECT_FALSE(built[3].expired());
  EXPECT_TRUE(built[0].expired());
  EXPECT_TRUE(built[1].expired());
  // A grammar a request holds is not dropped for memory: it would free nothing.
  auto held = compiler.Compile({.kind = ConstraintKind::kRegex, .text = texts[3]});
  ASSERT_TRUE(held.ok());
  for (uint32_t seed = 10; seed < 14; ++seed)
    ASSERT_TRUE(compiler.Compile({.kind = ConstraintKind::kRegex, .text = NegatedClasses(300, seed)}).ok());
  auto again = compiler.Compile({.kind = ConstraintKind::kRegex, .text = texts[3]});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->get(), held->get());
}

}  // namespace
}  // namespace tern::grammar
