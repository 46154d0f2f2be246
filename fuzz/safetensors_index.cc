// model.safetensors.index.json as TensorStore::OpenDir reads it. The input is
// written to a private directory that also holds one small valid shard,
// "model-00001-of-00001.safetensors", so an index naming it loads fully.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "base/mapped_file.h"
#include "model/safetensors.h"

namespace {

// The private directory; never destroyed, so that the exit handler removing
// it (one directory per process: -fork starts many) can still read its name.
const std::string& Dir() {
  static const std::string* dir = [] {
    char tmpl[] = "/tmp/tern_fuzz_index_XXXXXX";
    const char* d = mkdtemp(tmpl);
    if (d == nullptr) std::abort();
    auto* s = new std::string(d);
    std::vector<tern::TensorToWrite> tensors = {
        {"model.embed_tokens.weight", tern::DType::kBF16, {2, 2}, std::string(8, '\x01')},
        {"lm_head.weight", tern::DType::kF32, {1, 2}, std::string(8, '\x02')}};
    if (!tern::WriteSafetensors(*s + "/model-00001-of-00001.safetensors", tensors, {{"format", "pt"}}).ok()) {
      std::abort();
    }
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(Dir(), ec);
    });
    return s;
  }();
  return *dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& dir = Dir();
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (!tern::WriteStringToFile(dir + "/model.safetensors.index.json", text).ok()) std::abort();
  auto store = tern::TensorStore::OpenDir(dir);
  if (store.ok()) {
    for (const auto& [name, t] : store->all()) (void)store->Find(name);
    (void)store->Unused();
  }
  return 0;
}
