// Tokenizer::FromJson / FromFile: tokenizer.json into TokenizerData.
#include <exception>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "base/mapped_file.h"
#include "tokenize/byte_level.h"
#include "tokenize/tokenizer.h"
#include "tokenize/tokenizer_data.h"

namespace tern {
namespace {

using tok::AddedToken;
using tok::TokenizerData;

Result<std::vector<AddedToken>> ParseAddedTokens(const nlohmann::json& root) {
  std::vector<AddedToken> tokens;
  auto it = root.find("added_tokens");
  if (it == root.end() || it->is_null()) return tokens;
  if (!it->is_array()) return Status::Error("\"added_tokens\" must be an array");
  for (size_t i = 0; i < it->size(); ++i) {
    const auto& t = (*it)[i];
    if (!t.is_object() || !t.contains("content") || !t["content"].is_string()) {
      return Status::Errorf("added_tokens[{}]: expected an object with a string \"content\"", i);
    }
    auto flag = [&](const char* key, bool fallback) {
      auto f = t.find(key);
      return (f != t.end() && f->is_boolean()) ? f->get<bool>() : fallback;
    };
    AddedToken a;
    a.content = t["content"].get<std::string>();
    a.special = flag("special", false);
    a.single_word = flag("single_word", false);
    a.lstrip = flag("lstrip", false);
    a.rstrip = flag("rstrip", false);
    a.normalized = flag("normalized", true);
    tokens.push_back(std::move(a));
  }
  return tokens;
}

bool SameFlags(const AddedToken& a, const AddedToken& b) {
  return a.content == b.content && a.special == b.special && a.single_word == b.single_word &&
         a.lstrip == b.lstrip && a.rstrip == b.rstrip && a.normalized == b.normalized;
}

// Assigns ids as Hugging Face's AddedVocabulary::add_tokens does when a file
// is loaded (the "id" fields are only checked there, with a warning): a
// content already in the model vocabulary keeps its id, new ones are numbered
// from the model's vocabulary size (its number of entries) upwards.
// Returns the tokens to match, in file order, and fills data->added_ids.
std::vector<AddedToken> AssignAddedIds(std::vector<AddedToken> tokens, TokenizerData* data,
                                       std::unordered_set<std::string>* special_contents) {
  for (const AddedToken& t : tokens) {
    if (t.special && !t.content.empty()) special_contents->insert(t.content);
  }
  const int64_t model_size = int64_t(data->model.vocab().size());
  int64_t next_id = model_size;
  std::vector<AddedToken> kept;  // unique (content, flags), later ones win on the id
  for (AddedToken& t : tokens) {
    if (t.content.empty()) continue;
    bool exists = false;
    for (const AddedToken& k : kept) exists = exists || SameFlags(k, t);
    if (exists) continue;
    int32_t id;
    if (auto a = data->added_ids.find(t.content); a != data->added_ids.end()) {
      id = a->second;
    } else if (auto m = data->model.TokenToId(t.content)) {
      id = *m;
    } else {
      id = int32_t(next_id++);
    }
    data->added_ids[t.content] = id;
    t.id = id;
    kept.push_back(t);
  }
  return kept;
}

Status BuildIdTables(const std::vector<AddedToken>& added,
                     const std::unordered_set<std::string>& special_contents,
                     TokenizerData* data) {
  int64_t size = 0;
  for (const auto& [token, id] : data->model.vocab()) size = std::max<int64_t>(size, id + 1);
  for (const AddedToken& t : added) size = std::max<int64_t>(size, t.id + 1);
  if (size > INT32_MAX) return Status::Error("token ids exceed 2^31");
  // The tables below are dense in the id: a file with a few tokens but one
  // huge id would make them gigabytes (found by fuzz/tokenizer_json). Real
  // vocabularies are dense (holes are a handful of ids), so allow generous
  // sparseness and refuse the rest.
  const int64_t count = int64_t(data->model.vocab().size() + added.size());
  if (size > 4 * count + 65536) {
    return Status::Errorf("token ids reach {} for only {} tokens (the id space would be too sparse)", size - 1,
                          count);
  }
  data->id_to_token.assign(size_t(size), std::string());
  data->flags.assign(size_t(size), 0);
  for (const auto& [token, id] : data->model.vocab()) {
    data->id_to_token[size_t(id)] = token;
    data->flags[size_t(id)] = TokenizerData::kHasToken;
  }
  // Added tokens override the model's string for their id; the last token
  // given an id is the one Hugging Face keeps.
  for (const AddedToken& t : added) {
    data->id_to_token[size_t(t.id)] = t.content;
    data->flags[size_t(t.id)] = TokenizerData::kHasToken;
  }
  for (size_t id = 0; id < data->id_to_token.size(); ++id) {
    if ((data->flags[id] & TokenizerData::kHasToken) &&
        special_contents.count(data->id_to_token[id])) {
      data->flags[id] |= TokenizerData::kSpecial;
    }
  }
  // Decoder byte strings.
  const auto& alphabet = tok::ByteLevelAlphabet::Get();
  data->decoded_offsets.assign(size_t(size) + 1, 0);
  std::string bytes;
  for (size_t id = 0; id < data->id_to_token.size(); ++id) {
    data->decoded_offsets[id] = uint32_t(data->decoded_bytes.size());
    const std::string& token = data->id_to_token[id];
    // ByteLevel decoder: a token whose characters are not all in the
    // alphabet (an added token such as "<｜tool▁sep｜>") stays as it is.
    if (data->decoder == tok::DecoderKind::kByteLevel && alphabet.Decode(token, &bytes)) {
      data->decoded_bytes += bytes;
    } else {
      data->decoded_bytes += token;
    }
    if (data->decoded_bytes.size() > UINT32_MAX) return Status::Error("vocabulary too large");
  }
  data->decoded_offsets[size_t(size)] = uint32_t(data->decoded_bytes.size());
  return Status::Ok();
}

Result<tok::DecoderKind> ParseDecoder(const nlohmann::json& j) {
  if (j.is_null()) return tok::DecoderKind::kJoinSpace;
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string()) {
    return Status::Error("decoder: expected an object with a string \"type\"");
  }
  const std::string type = j["type"].get<std::string>();
  if (type == "ByteLevel") return tok::DecoderKind::kByteLevel;
  if (type == "Sequence" && j.contains("decoders") && j["decoders"].is_array() &&
      j["decoders"].size() == 1) {
    return ParseDecoder(j["decoders"][0]);
  }
  return Status::Errorf("decoder {} is not supported (only ByteLevel)", j.dump().substr(0, 200));
}

Result<std::shared_ptr<const TokenizerData>> Load(std::string_view json) {
  nlohmann::json root = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return Status::Error("not valid JSON");
  if (!root.is_object()) return Status::Error("top level must be a JSON object");
  if (root.contains("version") && root["version"] != "1.0") {
    return Status::Errorf("unknown tokenizer.json version {}", root["version"].dump());
  }
  auto data = std::make_shared<TokenizerData>();
  auto field = [&](const char* key) -> const nlohmann::json& {
    static const nlohmann::json kNull;
    auto it = root.find(key);
    return it == root.end() ? kNull : *it;
  };
  auto normalizer = tok::Normalizer::FromJson(field("normalizer"));
  if (!normalizer.ok()) return normalizer.status();
  data->normalizer = std::move(normalizer).value();
  auto pre = tok::PreTokenizer::FromJson(field("pre_tokenizer"));
  if (!pre.ok()) return pre.status();
  data->pre_tokenizer = std::move(pre).value();
  if (!root.contains("model")) return Status::Error("missing \"model\"");
  auto model = tok::BpeModel::FromJson(root["model"], data->pre_tokenizer.byte_level());
  if (!model.ok()) return model.status().WithContext("model");
  data->model = std::move(model).value();
  auto post = tok::PostProcessor::FromJson(field("post_processor"));
  if (!post.ok()) return post.status();
  data->post_processor = std::move(post).value();
  auto decoder = ParseDecoder(field("decoder"));
  if (!decoder.ok()) return decoder.status();
  data->decoder = decoder.value();

  TERN_ASSIGN_OR_RETURN(std::vector<AddedToken> parsed, ParseAddedTokens(root));
  std::unordered_set<std::string> special_contents;
  std::vector<AddedToken> added = AssignAddedIds(std::move(parsed), data.get(), &special_contents);
  std::vector<std::string> normalized_contents;
  for (const AddedToken& t : added) {
    std::string n;
    TERN_RETURN_IF_ERROR(data->normalizer.Apply(t.content, &n));
    normalized_contents.push_back(std::move(n));
  }
  TERN_RETURN_IF_ERROR(BuildIdTables(added, special_contents, data.get()));
  data->added = tok::AddedVocabulary(std::move(added), normalized_contents);
  for (int32_t id : data->post_processor.prefix) {
    if (!data->HasToken(id)) return Status::Errorf("post_processor: id {} has no token", id);
  }
  for (int32_t id : data->post_processor.suffix) {
    if (!data->HasToken(id)) return Status::Errorf("post_processor: id {} has no token", id);
  }
  return std::shared_ptr<const TokenizerData>(std::move(data));
}

}  // namespace

Result<Tokenizer> Tokenizer::FromJson(std::string_view json) {
  try {
    auto data = Load(json);
    if (!data.ok()) return data.status().WithContext("tokenizer.json");
    return Tokenizer(std::move(data).value());
  } catch (const std::exception& e) {
    // nlohmann::json throws on a few shapes the checks above do not foresee.
    return Status::Errorf("tokenizer.json: {}", e.what());
  }
}

Result<Tokenizer> Tokenizer::FromFile(const std::string& path) {
  auto file = MappedFile::Open(path);
  if (!file.ok()) return file.status();
  std::string_view json(reinterpret_cast<const char*>(file->data()), file->size());
  auto tokenizer = FromJson(json);
  if (!tokenizer.ok()) return tokenizer.status().WithContext(path);
  return tokenizer;
}

}  // namespace tern
