#include "tokenize/golden_check.h"

#include <fstream>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tokenize/stream_decoder.h"
#include "tokenize/test_util.h"
#include "tokenize/utf8.h"

namespace tern::tok::testing {
namespace {

std::string StreamAll(const Tokenizer& t, const std::vector<int32_t>& ids, bool skip) {
  StreamDecoder stream(t, skip);
  std::string out;
  for (int32_t id : ids) {
    std::string piece = stream.Push(id);
    EXPECT_TRUE(IsValidUtf8(piece)) << "StreamDecoder emitted broken UTF-8: " << Escape(piece);
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

std::string OrError(const Result<std::string>& r) {
  return r.ok() ? Escape(*r) : "<error: " + r.status().message() + ">";
}

std::string Str(const nlohmann::json& j, const char* key, const std::string& fallback) {
  return j.contains(key) ? j[key].get<std::string>() : fallback;
}

}  // namespace

bool ReadGoldenHeader(const std::string& golden_path, GoldenHeader* header) {
  std::ifstream in(golden_path);
  std::string line;
  if (!in || !std::getline(in, line)) {
    ADD_FAILURE() << "cannot read " << golden_path;
    return false;
  }
  const auto j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.contains("sha256") || !j.contains("tokenizer")) {
    ADD_FAILURE() << golden_path << ": bad header line";
    return false;
  }
  header->tokenizer = j["tokenizer"].get<std::string>();
  header->sha256 = j["sha256"].get<std::string>();
  return true;
}

GoldenCounts CheckGoldenFile(const Tokenizer& t, const std::string& golden_path,
                             const std::string& label) {
  GoldenCounts c;
  std::ifstream in(golden_path);
  std::string line;
  if (!in || !std::getline(in, line)) {  // header
    ADD_FAILURE() << "cannot read " << golden_path;
    return c;
  }
  auto report = [&](const std::string& what) {
    if (++c.failures <= 25) ADD_FAILURE() << label << ": " << what;
  };
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line);
    if (j.contains("text")) {
      ++c.texts;
      const std::string text = j["text"].get<std::string>();
      const auto want = j["ids"].get<std::vector<int32_t>>();
      const auto want_plain =
          j.contains("plain_ids") ? j["plain_ids"].get<std::vector<int32_t>>() : want;
      const std::string dec = Str(j, "dec", text);
      const std::string dec_skip = Str(j, "dec_skip", dec);
      const std::string shown = "\"" + Escape(text) + "\"";
      auto ids = t.Encode(text, /*add_special_tokens=*/true);
      if (!ids.ok()) {
        report("Encode(" + shown + ") failed: " + ids.status().message());
        continue;
      }
      if (*ids != want) {
        report("Encode(" + shown + ")\n  got  " + IdsText(*ids) + "\n  want " + IdsText(want));
        continue;
      }
      auto plain = t.Encode(text, /*add_special_tokens=*/false);
      if (!plain.ok() || *plain != want_plain) {
        report("Encode(" + shown + ", add_special_tokens=false) differs");
      }
      auto d = t.Decode(want, false);
      auto ds = t.Decode(want, true);
      if (!d.ok() || *d != dec) report("Decode(" + IdsText(want) + ") = " + OrError(d));
      if (!ds.ok() || *ds != dec_skip) report("Decode(" + IdsText(want) + ", skip) = " + OrError(ds));
      if (StreamAll(t, want, false) != dec) report("stream decode of " + IdsText(want));
      if (StreamAll(t, want, true) != dec_skip) report("stream decode (skip) of " + IdsText(want));
    } else {
      ++c.decodes;
      const auto ids = j["decode_ids"].get<std::vector<int32_t>>();
      const std::string dec = j["dec"].get<std::string>();
      const std::string dec_skip = Str(j, "dec_skip", dec);
      auto d = t.Decode(ids, false);
      auto ds = t.Decode(ids, true);
      if (!d.ok() || *d != dec) {
        report("Decode(" + IdsText(ids) + ")\n  got  " + OrError(d) + "\n  want " + Escape(dec));
      }
      if (!ds.ok() || *ds != dec_skip) report("Decode(" + IdsText(ids) + ", skip) = " + OrError(ds));
      if (StreamAll(t, ids, false) != dec) report("stream decode of " + IdsText(ids));
      if (StreamAll(t, ids, true) != dec_skip) report("stream decode (skip) of " + IdsText(ids));
    }
  }
  return c;
}

}  // namespace tern::tok::testing
