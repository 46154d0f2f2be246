// Tokenizer API contracts on the synthetic tokenizer: errors for invalid
// UTF-8 and ids without a token, clear load errors for malformed
// tokenizer.json (and no crash on truncated or corrupted files).
#include "tokenize/tokenizer.h"

#include <atomic>
#include <functional>
#include <random>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tokenize/synthetic.h"

namespace tern {
namespace {

const std::string& SyntheticJson() {
  static const std::string json = MakeSyntheticTokenizerJson(512);
  return json;
}

Tokenizer Synthetic() { return Tokenizer::FromJson(SyntheticJson()).value(); }

// The synthetic tokenizer.json with one edit applied.
std::string Edited(const std::function<void(nlohmann::json&)>& edit) {
  auto j = nlohmann::json::parse(SyntheticJson());
  edit(j);
  return j.dump();
}

void ExpectLoadError(const std::string& json, const std::string& fragment) {
  auto t = Tokenizer::FromJson(json);
  ASSERT_FALSE(t.ok()) << "loaded although it should fail with: " << fragment;
  EXPECT_NE(t.status().message().find(fragment), std::string::npos) << t.status().message();
}

TEST(Tokenizer, RejectsInvalidUtf8) {
  const Tokenizer t = Synthetic();
  for (std::string bad : {std::string("abc\xFF"), std::string("\xC3"), std::string("a\xED\xA0\x80"),
                          std::string("\xC0\xAF"), std::string("ok \xF4\x90\x80\x80")}) {
    auto ids = t.Encode(bad);
    ASSERT_FALSE(ids.ok()) << bad;
    EXPECT_NE(ids.status().message().find("not valid UTF-8"), std::string::npos);
  }
  auto ids = t.Encode("abc\xFF");
  EXPECT_NE(ids.status().message().find("offset 3"), std::string::npos) << ids.status().message();
  EXPECT_TRUE(t.Encode("").ok());
  EXPECT_TRUE(t.Encode("").value().empty());
}

TEST(Tokenizer, DecodeRejectsIdsWithoutToken) {
  const Tokenizer t = Synthetic();
  EXPECT_EQ(t.vocab_size(), 512);
  for (int32_t bad : {-1, 512, 1 << 30, INT32_MIN}) {
    std::vector<int32_t> ids = {1, bad};
    auto text = t.Decode(ids, false);
    ASSERT_FALSE(text.ok()) << bad;
    EXPECT_NE(text.status().message().find(std::to_string(bad)), std::string::npos);
  }
  EXPECT_TRUE(t.IdToToken(-5).empty());
  EXPECT_TRUE(t.IdToToken(512).empty());
  EXPECT_FALSE(t.IsSpecial(-1));
  EXPECT_FALSE(t.IsSpecial(100000));
}

TEST(Tokenizer, VocabularyLookups) {
  const Tokenizer t = Synthetic();
  EXPECT_EQ(t.TokenToId("!"), 0);  // GPT-2 byte order, as in Qwen3
  EXPECT_EQ(t.IdToToken(0), "!");
  EXPECT_EQ(t.TokenToId("\xC4\xA0"), 220);  // "Ġ" (space) as in Qwen3
  EXPECT_EQ(t.TokenToId("<|im_end|>"), 505);
  EXPECT_TRUE(t.IsSpecial(505));
  EXPECT_EQ(t.TokenToId("<think>"), 510);
  EXPECT_FALSE(t.IsSpecial(510));
  EXPECT_FALSE(t.TokenToId("no such token").has_value());
  // skip_special_tokens drops special added tokens but keeps <think>.
  auto ids = t.Encode("<|im_start|>a<think>b</think><|im_end|>");
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(t.Decode(*ids, true).value(), "a<think>b</think>");
  EXPECT_EQ(t.Decode(*ids, false).value(), "<|im_start|>a<think>b</think><|im_end|>");
}

TEST(Tokenizer, CopiesShareAndOutliveOriginal) {
  std::optional<Tokenizer> copy;
  {
    const Tokenizer t = Synthetic();
    copy = t;
  }
  EXPECT_EQ(copy->Decode(copy->Encode("hello").value(), false).value(), "hello");
}

// Found by fuzz/tokenizer_json: one token with id 177777793 made the dense
// id tables allocate gigabytes (an out-of-memory abort). A sparse id space
// is an error; a vocabulary with a few holes still loads.
TEST(Tokenizer, HugeSparseIdIsALoadErrorNotAnAllocation) {
  ExpectLoadError(Edited([](auto& j) { j["model"]["vocab"]["\u0100"] = 177777793u; }), "too sparse");
  ExpectLoadError(Edited([](auto& j) { j["model"]["vocab"]["\u0101"] = 2000000000u; }), "too sparse");
  auto holes = Tokenizer::FromJson(Edited([](auto& j) { j["model"]["vocab"]["\u0100"] = 60000u; }));
  ASSERT_TRUE(holes.ok()) << holes.status().message();
  EXPECT_EQ(holes->IdToToken(60000), "\u0100");
}

TEST(Tokenizer, MalformedJsonGivesClearErrors) {
  ExpectLoadError("", "not valid JSON");
  ExpectLoadError("{\"model\": ", "not valid JSON");
  ExpectLoadError("[1, 2]", "top level must be a JSON object");
  ExpectLoadError("{}", "missing \"model\"");
  ExpectLoadError(Edited([](auto& j) { j["version"] = "2.0"; }), "version");
  ExpectLoadError(Edited([](auto& j) { j["model"]["type"] = "WordPiece"; }), "not supported");
  ExpectLoadError(Edited([](auto& j) { j["model"].erase("vocab"); }), "missing \"vocab\"");
  ExpectLoadError(Edited([](auto& j) { j["model"]["vocab"]["!"] = -3; }), "vocab[\"!\"]");
  ExpectLoadError(Edited([](auto& j) { j["model"]["vocab"]["!"] = "zero"; }), "vocab[\"!\"]");
  ExpectLoadError(Edited([](auto& j) { j["model"].erase("merges"); }), "missing \"merges\"");
  ExpectLoadError(Edited([](auto& j) { j["model"]["merges"][3] = {"nope", "x"}; }),
                  "merges[3]: token \"nope\" is not in the vocabulary");
  ExpectLoadError(Edited([](auto& j) { j["model"]["merges"][0] = {"a"}; }), "merges[0]");
  ExpectLoadError(Edited([](auto& j) { j["model"]["merges"] = {"a b c"}; }), "merges[0]");
  ExpectLoadError(Edited([](auto& j) { j["model"]["merges"] = {"a b", 7}; }), "merges[1]");
  ExpectLoadError(Edited([](auto& j) { j["model"]["dropout"] = 0.1; }), "dropout");
  ExpectLoadError(Edited([](auto& j) { j["model"]["unk_token"] = "<nope>"; }), "unk_token");
  ExpectLoadError(Edited([](auto& j) { j["normalizer"] = {{"type", "Lowercase"}}; }),
                  "normalizer type \"Lowercase\" is not supported");
  ExpectLoadError(Edited([](auto& j) { j["normalizer"] = 5; }), "normalizer");
  ExpectLoadError(Edited([](auto& j) { j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(["; }),
                  "Split pattern");
  ExpectLoadError(Edited([](auto& j) { j["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "Sideways"; }),
                  "unknown behavior");
  ExpectLoadError(Edited([](auto& j) { j["pre_tokenizer"] = {{"type", "Metaspace"}}; }),
                  "pre_tokenizer type \"Metaspace\" is not supported");
  ExpectLoadError(Edited([](auto& j) {  // Split after ByteLevel
                    auto& steps = j["pre_tokenizer"]["pretokenizers"];
                    steps.push_back(steps[0]);
                  }),
                  "ByteLevel must be the last step");
  ExpectLoadError(Edited([](auto& j) { j["decoder"] = {{"type", "WordPiece"}}; }), "decoder");
  ExpectLoadError(Edited([](auto& j) { j["post_processor"] = {{"type", "Fancy"}}; }), "Fancy");
  ExpectLoadError(Edited([](auto& j) {
                    j["post_processor"] = {{"type", "TemplateProcessing"},
                                           {"single", {{{"SpecialToken", {{"id", "<s>"}}}}}},
                                           {"special_tokens", nlohmann::json::object()}};
                  }),
                  "TemplateProcessing");
  ExpectLoadError(Edited([](auto& j) { j["added_tokens"][0] = {{"id", 1}}; }), "added_tokens[0]");
  ExpectLoadError(Edited([](auto& j) { j["added_tokens"] = "none"; }), "added_tokens");
}

TEST(Tokenizer, CorruptedFilesNeverCrash) {
  // Truncations and byte flips of a valid file: each load fails cleanly or
  // gives a tokenizer that encodes and decodes without crashing.
  const std::string& json = SyntheticJson();
  std::mt19937 rng(7);
  for (int i = 0; i < 60; ++i) {
    std::string bad = json.substr(0, rng() % json.size());
    EXPECT_FALSE(Tokenizer::FromJson(bad).ok());
  }
  const std::string alphabet = "{}[]\":,0123456789abcnulltrue \\";
  for (int i = 0; i < 150; ++i) {
    std::string bad = json;
    for (int k = 0; k < 3; ++k) bad[rng() % bad.size()] = alphabet[rng() % alphabet.size()];
    auto t = Tokenizer::FromJson(bad);
    if (t.ok()) {
      auto ids = t->Encode("Hello, world! <|im_end|> 123");
      if (ids.ok()) (void)t->Decode(*ids, true);
    }
  }
}

TEST(Tokenizer, FromFileNamesThePath) {
  auto t = Tokenizer::FromFile("/nonexistent/dir/tokenizer.json");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("/nonexistent/dir/tokenizer.json"), std::string::npos);
}

TEST(Tokenizer, LongInputs) {
  // Long runs exercise the heap merge path and the regex on long matches.
  const Tokenizer t = Synthetic();
  for (const std::string& text : {std::string(100000, 'a'), std::string(50000, ' '),
                                  std::string(30000, '\n') + "x", std::string(20000, '!')}) {
    auto ids = t.Encode(text);
    ASSERT_TRUE(ids.ok()) << ids.status().message();
    EXPECT_EQ(t.Decode(*ids, false).value(), text);
  }
}

}  // namespace
}  // namespace tern

namespace tern {
namespace {

TEST(Tokenizer, ConcurrentEncodeMatchesSerial) {
  // Encode is const and thread-safe (per-thread caches); results must not
  // depend on which thread runs it.
  const Tokenizer t = Synthetic();
  std::vector<std::string> texts;
  std::mt19937 rng(11);
  const std::vector<std::string> words = {"the", " model", " reads", " text", "\n", " 42",
                                          "<|im_end|>", " caf\xC3\xA9", " \xE4\xBD\xA0", "!"};
  for (int i = 0; i < 200; ++i) {
    std::string s;
    for (int k = 0; k < 20; ++k) s += words[rng() % words.size()];
    texts.push_back(s);
  }
  std::vector<std::vector<int32_t>> serial;
  for (const auto& s : texts) serial.push_back(t.Encode(s).value());
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int th = 0; th < 4; ++th) {
    threads.emplace_back([&, th] {
      for (size_t i = 0; i < texts.size(); ++i) {
        const size_t k = (i * 7 + size_t(th) * 13) % texts.size();
        if (t.Encode(texts[k]).value() != serial[k]) ++mismatches;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

}  // namespace
}  // namespace tern
