// Compile time (until the grammar is usable: automaton plus the eager mask
// budget; and with every state's mask) and per-token mask time on the real
// Qwen3 tokenizer, for a JSON schema, a regex and an EBNF grammar. Mask times are per call of
// FillNextTokenMask along a walk that picks a random allowed token each
// step; the median and p99 are reported as counters (microseconds). BM_Mask/i/0
// uses a fresh compile with the serving default (masks computed eagerly
// within a CPU budget, the rest by the background worker or on first use,
// whichever comes first: the first request's view);
// BM_Mask/i/1 a grammar with every mask computed (a cached schema's view).
//   build/src/grammar/grammar_benchmark --benchmark_counters_tabular=true
#include <algorithm>
#include <chrono>
#include <random>
#include <string>

#include <benchmark/benchmark.h>

#include "grammar/compiler.h"
#include "grammar/matcher.h"
#include "tokenize/test_util.h"
#include "tokenize/tokenizer.h"

namespace tern::grammar {
namespace {

struct Case {
  const char* name;
  ConstraintKind kind;
  const char* text;
};
const Case kCases[] = {
    {"json_schema", ConstraintKind::kJsonSchema,
     R"({"type":"object","properties":{"name":{"type":"string","maxLength":40},"age":{"type":"integer","minimum":0,"maximum":150},
        "email":{"type":"string","format":"email"},"tags":{"type":"array","items":{"type":"string"},"maxItems":8},
        "address":{"type":"object","properties":{"city":{"type":"string"},"zip":{"type":"string","pattern":"^[0-9]{5}$"}},
                   "required":["city"]},"score":{"type":"number"}},"required":["name","age"]})"},
    {"regex", ConstraintKind::kRegex, R"((\+1 )?\(\d{3}\) \d{3}-\d{4}|[a-z]+(\.[a-z]+)*@[a-z]+\.(com|org|net))"},
    {"ebnf", ConstraintKind::kEbnf,
     "root ::= stmt (\"\\n\" stmt)*\nstmt ::= name \" = \" expr\nexpr ::= term ((\" + \" | \" * \") term)*\n"
     "term ::= name | [0-9]+ | \"(\" expr \")\"\nname ::= [a-z] [a-z0-9_]{0,15}"},
};

std::shared_ptr<const TokenVocabulary> Qwen3Vocab(std::vector<int32_t>* stops) {
  static std::shared_ptr<const TokenVocabulary> vocab;
  static std::vector<int32_t> eos;
  if (!vocab) {
    const auto path = tok::testing::NpmTokenizerFile("qwen3", "tokenizer.json");
    if (!path) return nullptr;
    auto tok = Tokenizer::FromFile(*path);
    if (!tok.ok()) return nullptr;
    vocab = TokenVocabulary::FromTokenizer(*tok, 151936);
    eos = {*tok->TokenToId("<|im_end|>"), *tok->TokenToId("<|endoftext|>")};
  }
  *stops = eos;
  return vocab;
}

void BM_Compile(benchmark::State& state) {
  const Case& c = kCases[state.range(0)];
  std::vector<int32_t> stops;
  auto vocab = Qwen3Vocab(&stops);
  if (!vocab) return state.SkipWithError("Qwen3 tokenizer missing: run scripts/fetch-test-data.sh");
  state.SetLabel(c.name);
  for (auto _ : state) {
    GrammarCompiler compiler(vocab);  // a fresh cache: the full compile each time
    auto g = compiler.Compile({.kind = c.kind, .text = c.text});
    if (!g.ok()) return state.SkipWithError(g.status().message().c_str());
    benchmark::DoNotOptimize(g);
  }
}
BENCHMARK(BM_Compile)->DenseRange(0, 2)->Unit(benchmark::kMillisecond)->Iterations(3);

// Every state's mask computed up front (what a grammar costs in all).
void BM_CompileAllMasks(benchmark::State& state) {
  const Case& c = kCases[state.range(0)];
  std::vector<int32_t> stops;
  auto vocab = Qwen3Vocab(&stops);
  if (!vocab) return state.SkipWithError("Qwen3 tokenizer missing: run scripts/fetch-test-data.sh");
  state.SetLabel(c.name);
  for (auto _ : state) {
    auto ast = ConstraintToAst({.kind = c.kind, .text = c.text});
    auto a = Automaton::Build(*ast);
    if (!a.ok()) return state.SkipWithError(a.status().message().c_str());
    const int32_t states = a->num_states();
    auto g = CompiledGrammar::Create(std::move(*a), vocab);
    state.counters["states"] = states;
    state.counters["mask_MB"] = double(g->memory_bytes()) / 1e6;
  }
}
BENCHMARK(BM_CompileAllMasks)->DenseRange(0, 2)->Unit(benchmark::kMillisecond)->Iterations(2);

void BM_Mask(benchmark::State& state) {
  const Case& c = kCases[state.range(0)];
  std::vector<int32_t> stops;
  auto vocab = Qwen3Vocab(&stops);
  if (!vocab) return state.SkipWithError("Qwen3 tokenizer missing: run scripts/fetch-test-data.sh");
  state.SetLabel(std::string(c.name) + (state.range(1) ? " warm" : " cold"));
  GrammarCompilerOptions options;
  if (state.range(1)) options.eager_mask_cpu = std::chrono::milliseconds(3600 * 1000);
  GrammarCompiler compiler(vocab, options);
  auto g = compiler.Compile({.kind = c.kind, .text = c.text});
  if (!g.ok()) return state.SkipWithError(g.status().message().c_str());
  std::vector<uint64_t> mask(vocab->mask_words());
  std::vector<double> us;
  std::mt19937 rng(3);
  auto matcher = std::make_unique<GrammarMatcher>(*g, stops);
  int steps = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    matcher->FillNextTokenMask(mask);
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    state.PauseTiming();
    std::vector<int32_t> allowed;
    for (int32_t id = 0; id < vocab->size(); ++id)
      if ((mask[size_t(id) >> 6] >> (id & 63)) & 1) allowed.push_back(id);
    int32_t pick = allowed.empty() ? -1 : allowed[rng() % allowed.size()];
    if (++steps > 200 || pick < 0 || !matcher->AcceptToken(pick) || matcher->IsTerminated()) {
      matcher = std::make_unique<GrammarMatcher>(*g, stops);
      steps = 0;
    }
    state.ResumeTiming();
  }
  std::sort(us.begin(), us.end());
  state.counters["median_us"] = us[us.size() / 2];
  state.counters["p99_us"] = us[std::min(us.size() - 1, us.size() * 99 / 100)];
  state.counters["max_us"] = us.back();
}
BENCHMARK(BM_Mask)->ArgsProduct({{0, 1, 2}, {0, 1}})->Iterations(2000);

}  // namespace
}  // namespace tern::grammar

BENCHMARK_MAIN();
