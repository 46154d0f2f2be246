#include "app/model_files.h"

#include <charconv>
#include <filesystem>

namespace tern::app {

Result<Tokenizer> LoadTokenizer(const std::string& model_dir) {
  return Tokenizer::FromFile((std::filesystem::path(model_dir) / "tokenizer.json").string());
}

Result<std::vector<int32_t>> ParseIds(const std::string& text) {
  std::vector<int32_t> ids;
  const char* p = text.data();
  const char* end = p + text.size();
  while (p < end) {
    while (p < end && (*p == ' ' || *p == ',' || *p == '[' || *p == ']')) ++p;
    if (p == end) break;
    int32_t v = 0;
    auto [next, ec] = std::from_chars(p, end, v);
    if (ec != std::errc() || v < 0)
      return Status::Errorf("invalid token id list \"{}\": expected comma-separated non-negative integers", text);
    ids.push_back(v);
    p = next;
  }
  if (ids.empty()) return Status::Errorf("no token ids in \"{}\"", text);
  return ids;
}

}  // namespace tern::app
