// Constrained decoding through the engine: random weights at temperature 1,
// every output checked with std::regex (an independent matcher), n > 1
// choices sharing a cached prompt, max_tokens cut-offs, and a grammar that
// starts only after a marker token (the reasoning case).
#include <regex>

#include <gtest/gtest.h>

#include "engine/engine_test_util.h"
#include "grammar/compiler.h"

namespace tern {
namespace {

constexpr int32_t kEos = 2;

// Ids 32..95 are the ASCII characters of the same code; 2 is EOS (special); the rest decode to nothing.
std::shared_ptr<const grammar::TokenVocabulary> TinyVocab() {
  std::vector<std::string> bytes(96);
  std::vector<bool> special(96, false);
  for (int i = 32; i < 96; ++i) bytes[size_t(i)] = std::string(1, char(i));
  special[kEos] = true;
  return grammar::TokenVocabulary::FromBytes(bytes, special);
}

std::string Text(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids)
    if (id >= 32 && id < 96) s += char(id);
  return s;
}

class EngineGrammar : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = ::testing::TempDir() + "/tern_engine_grammar";
    testing::WriteTinyMoe(dir_);
  }
  static std::string dir_;
};
std::string EngineGrammar::dir_;

// A grammar whose language ends (two capitals) and no stop token to end the
// reply: the engine stops when nothing more fits, the reply's last token
// reported as what matched (SGLang: FINISH_MATCHED_TOKEN(output_ids[-1])).
TEST_F(EngineGrammar, ACompleteGrammarEndsTheReplyMatchedByItsLastToken) {
  auto model = LoadModel(dir_, {});
  ASSERT_TRUE(model.ok()) << model.status().message();
  grammar::GrammarCompiler compiler(TinyVocab());
  auto g = compiler.Compile({.kind = grammar::ConstraintKind::kRegex, .text = "[A-Z]{2}"});
  ASSERT_TRUE(g.ok()) << g.status().message();
  std::vector<EngineRequest> reqs;
  for (int i = 0; i < 6; ++i) {
    EngineRequest r{.id = "r" + std::to_string(i), .prompt = {5, 6, 7, 8, 9}, .max_tokens = 40};
    r.sampling.temperature = 1.0;
    r.sampling.seed = uint64_t(i);
    r.grammar = *g;
    reqs.push_back(r);
  }
  const EngineOptions o = OfflineEngineOptions(**model, reqs, {.kv = {.block_size = 4, .dtype = DType::kF32}});
  auto engine = Engine::Create(**model, o);
  ASSERT_TRUE(engine.ok());
  auto res = RunToCompletion(**engine, reqs);
  ASSERT_TRUE(res.ok()) << res.status().message();
  const std::regex full("[A-Z]{2}");
  for (const auto& r : *res) {
    const std::string text = Text(r.ids());
    EXPECT_TRUE(std::regex_match(text, full)) << text;
    EXPECT_EQ(r.reason, FinishReason::kStop);
    ASSERT_FALSE(r.ids().empty());
    EXPECT_EQ(r.matched_stop_token, r.ids().back());
  }
}

TEST_F(EngineGrammar, EveryOutputMatchesTheRegex) {
  auto model = LoadModel(dir_, {});
  ASSERT_TRUE(model.ok()) << model.status().message();
  grammar::GrammarCompiler compiler(TinyVocab());
  const std::string re = "[A-Z]{2,5}-(0|[1-9][0-9]{0,3})(\\.[0-9]+)?";
  auto g = compiler.Compile({.kind = grammar::ConstraintKind::kRegex, .text = re});
  ASSERT_TRUE(g.ok()) << g.status().message();
  std::vector<EngineRequest> reqs;
  for (int i = 0; i < 24; ++i) {
    EngineRequest r{.id = "r" + std::to_string(i), .prompt = {5, 6, 7, 8, 9}, .max_tokens = i % 3 == 0 ? 4 : 40};
    r.sampling.temperature = 1.0;
    r.sampling.seed = uint64_t(i);
    r.stop_token_ids = {kEos};
    r.grammar = *g;
    reqs.push_back(r);
  }
  const EngineOptions o = OfflineEngineOptions(**model, reqs, {.kv = {.block_size = 4, .dtype = DType::kF32}});
  auto engine = Engine::Create(**model, o);
  ASSERT_TRUE(engine.ok());
  auto res = RunToCompletion(**engine, reqs);
  ASSERT_TRUE(res.ok()) << res.status().message();
  const std::regex full(re), prefix("[A-Z]{0,5}(-(0|[1-9][0-9]{0,3})?(\\.[0-9]*)?)?");
  int stopped = 0;
  for (size_t i = 0; i < reqs.size(); ++i) {
    const auto& r = (*res)[i];
    const std::string text = Text(r.ids());
    if (r.reason == FinishReason::kStop) {
      ++stopped;
      EXPECT_TRUE(std::regex_match(text, full)) << text;
      EXPECT_EQ(r.ids().back(), kEos);
    } else {
      EXPECT_EQ(r.reason, FinishReason::kLength);
      EXPECT_EQ(int64_t(r.ids().size()), reqs[i].max_tokens);
      EXPECT_TRUE(std::regex_match(text, prefix)) << text;
    }
  }
  EXPECT_GT(stopped, 0);
}

TEST_F(EngineGrammar, ChoicesOfOneGroupAndAGrammarAfterAMarker) {
  auto model = LoadModel(dir_, {});
  ASSERT_TRUE(model.ok());
  grammar::GrammarCompiler compiler(TinyVocab());
  auto g = compiler.Compile({.kind = grammar::ConstraintKind::kEbnf, .text = "root ::= \"[\" [0-9] (\",\" [0-9]){0,3} \"]\""});
  ASSERT_TRUE(g.ok()) << g.status().message();
  const int32_t marker = 64;  // '@': free text until it is sampled
  std::vector<EngineRequest> reqs;
  for (int i = 0; i < 6; ++i) {
    EngineRequest r{.id = "g", .prompt = {10, 11, 12, 13, 14, 15, 16, 17, 18}, .max_tokens = 60};
    r.sampling.temperature = 1.0;
    r.sampling.seed = uint64_t(100 + i);
    r.stop_token_ids = {kEos};
    r.grammar = *g;
    if (i % 2) {
      r.grammar_after = {marker};
      r.sampling.logit_bias = {{marker, 6.0f}};  // reach the marker soon
    }
    reqs.push_back(r);
  }
  const EngineOptions o = OfflineEngineOptions(**model, reqs, {.kv = {.block_size = 4, .dtype = DType::kF32}});
  auto engine = Engine::Create(**model, o);
  ASSERT_TRUE(engine.ok());
  auto group = (*engine)->SubmitGroup(reqs);
  ASSERT_EQ(group.streams.size(), reqs.size()) << group.error;
  const std::regex list("\\[[0-9](,[0-9]){0,3}\\]");
  int stopped = 0;
  for (size_t i = 0; i < reqs.size(); ++i) {
    RequestUpdate last;
    const std::vector<int32_t> ids = testing::Collect(*group.streams[i], &last);
    ASSERT_TRUE(last.finished);
    std::string text = Text(ids);
    if (i % 2) {
      const size_t at = text.find('@');
      ASSERT_NE(at, std::string::npos) << text;
      text = text.substr(at + 1);
    }
    if (last.reason == FinishReason::kStop) {
      ++stopped;
      EXPECT_TRUE(std::regex_match(text, list)) << i << ": " << text;
    }
  }
  EXPECT_GE(stopped, 3);
}

// Retraction: a pool too small for every sequence sends some back to the
// queue mid-decode; their matchers keep their place (the tokens are kept and
// only the KV is recomputed), so the outputs still match and equal those of
// each request run alone (greedy).
TEST_F(EngineGrammar, SurvivesRetraction) {
  auto model = LoadModel(dir_, {});
  ASSERT_TRUE(model.ok());
  grammar::GrammarCompiler compiler(TinyVocab());
  const std::string re = "(AB|C[0-9])+-[0-9]{1,6}";
  auto g = compiler.Compile({.kind = grammar::ConstraintKind::kRegex, .text = re});
  ASSERT_TRUE(g.ok());
  auto request = [&](int i) {
    EngineRequest r{.id = std::to_string(i), .prompt = {20, 21, 22, 23, 24, 25, 26 + i}, .max_tokens = 24};
    r.sampling.temperature = 0;  // greedy: batching and recompute cannot change the choice
    r.stop_token_ids = {kEos};
    r.grammar = *g;
    return r;
  };
  std::vector<std::vector<int32_t>> alone;
  for (int i = 0; i < 6; ++i) {
    EngineOptions big{.kv = {.block_size = 4, .num_blocks = 64, .dtype = DType::kF32}, .enable_prefix_cache = false};
    auto e = Engine::Create(**model, big);
    ASSERT_TRUE(e.ok());
    auto res = RunToCompletion(**e, {request(i)});
    ASSERT_TRUE(res.ok());
    alone.push_back((*res)[0].ids());
  }
  EngineOptions small{.max_running_requests = 6, .chunked_prefill_size = 8,
                      .kv = {.block_size = 4, .num_blocks = 14, .dtype = DType::kF32}, .enable_prefix_cache = false};
  auto engine = Engine::Create(**model, small);
  ASSERT_TRUE(engine.ok());
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (int i = 0; i < 6; ++i) streams.push_back((*engine)->Submit(request(i)).stream);
  const std::regex full(re);
  for (int i = 0; i < 6; ++i) {
    RequestUpdate last;
    const std::vector<int32_t> ids = testing::Collect(*streams[size_t(i)], &last);
    EXPECT_EQ(ids, alone[size_t(i)]) << "request " << i;
    if (last.reason == FinishReason::kStop) {
      EXPECT_TRUE(std::regex_match(Text(ids), full)) << Text(ids);
    }
  }
  EXPECT_GT((*engine)->metrics().retractions_total.load(), 0u) << "the test meant to exercise retraction";
}

}  // namespace
}  // namespace tern
