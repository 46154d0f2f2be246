#include "model/safetensors.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace tern {
namespace fs = std::filesystem;
using nlohmann::json;

std::string TensorView::ShapeString() const { return fmt::format("[{}]", fmt::join(shape, ", ")); }

Result<std::vector<TensorView>> SafetensorsFile::ParseHeader(const uint8_t* data, size_t size,
                                                             const std::string& path) {
  if (size < 8) return Status::Errorf("{}: file of {} bytes is too small for a safetensors header", path, size);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | data[i];
  if (n > kMaxSafetensorsHeader)
    return Status::Errorf("{}: header length {} exceeds the {} byte limit", path, n, kMaxSafetensorsHeader);
  if (n > size - 8) return Status::Errorf("{}: header length {} runs past the end of the {} byte file", path, n, size);
  const char* hbegin = reinterpret_cast<const char*>(data + 8);
  json header = json::parse(hbegin, hbegin + n, nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded()) return Status::Errorf("{}: header is not valid JSON", path);
  if (!header.is_object()) return Status::Errorf("{}: header is not a JSON object", path);

  const uint8_t* body = data + 8 + n;
  const uint64_t body_size = size - 8 - n;
  std::vector<TensorView> out;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    if (name == "__metadata__") {
      if (!it->is_object()) return Status::Errorf("{}: __metadata__ is not an object", path);
      continue;
    }
    const json& t = it.value();
    auto bad = [&](std::string_view what) { return Status::Errorf("{}: tensor '{}': {}", path, name, what); };
    if (!t.is_object()) return bad("entry is not an object");
    const auto dt = t.find("dtype");
    const auto sh = t.find("shape");
    const auto off = t.find("data_offsets");
    if (dt == t.end() || !dt->is_string()) return bad("missing or non-string dtype");
    if (sh == t.end() || !sh->is_array()) return bad("missing or non-array shape");
    if (off == t.end() || !off->is_array() || off->size() != 2) return bad("data_offsets must be [begin, end]");
    TensorView v;
    v.name = name;
    auto dtype = DTypeFromName(dt->get<std::string>());
    if (!dtype) return bad(fmt::format("unsupported dtype '{}'", dt->get<std::string>()));
    v.dtype = *dtype;
    uint64_t count = 1;
    for (const json& d : *sh) {
      if (!d.is_number_unsigned()) return bad("shape entries must be non-negative integers");
      const uint64_t dim = d.get<uint64_t>();
      if (dim != 0 && count > (uint64_t(1) << 62) / dim) return bad("shape overflows");
      count *= dim;
      v.shape.push_back(int64_t(dim));
    }
    for (const json& o : *off)
      if (!o.is_number_unsigned()) return bad("data_offsets must be non-negative integers");
    const uint64_t b = (*off)[0].get<uint64_t>(), e = (*off)[1].get<uint64_t>();
    if (b > e) return bad(fmt::format("data_offsets [{}, {}] are reversed", b, e));
    if (e > body_size)
      return bad(fmt::format("data_offsets [{}, {}] run past the {} byte data section", b, e, body_size));
    // count <= 2^62, but times an 8-byte dtype it can wrap past 2^64 (to 0 bytes).
    uint64_t expected = 0;
    if (__builtin_mul_overflow(count, uint64_t(DTypeSize(v.dtype)), &expected))
      return bad(fmt::format("shape {} of {} is more than 2^64 bytes", v.ShapeString(), DTypeName(v.dtype)));
    if (e - b != expected)
      return bad(fmt::format("shape {} of {} needs {} bytes but data_offsets span {}", v.ShapeString(),
                             DTypeName(v.dtype), expected, e - b));
    v.data = body + b;
    v.nbytes = size_t(e - b);
    out.push_back(std::move(v));
  }
  // Ranges must tile the data section without overlap or gaps (as the reference implementation requires).
  std::vector<const TensorView*> sorted;
  for (const auto& v : out) sorted.push_back(&v);
  std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->data < b->data || (a->data == b->data && a->nbytes < b->nbytes); });
  uint64_t cursor = 0;
  for (const TensorView* v : sorted) {
    const uint64_t b = uint64_t(v->data - body);
    if (b < cursor) return Status::Errorf("{}: tensor '{}' overlaps the previous tensor's bytes", path, v->name);
    if (b > cursor) return Status::Errorf("{}: gap of {} bytes before tensor '{}'", path, b - cursor, v->name);
    cursor = b + v->nbytes;
  }
  if (cursor != body_size)
    return Status::Errorf("{}: data section has {} bytes but the tensors cover {}", path, body_size, cursor);
  return out;
}

Result<std::unique_ptr<SafetensorsFile>> SafetensorsFile::Open(const std::string& path, TensorMemory memory) {
  auto f = std::make_unique<SafetensorsFile>();
  TERN_ASSIGN_OR_RETURN(f->file_, MappedFile::Open(path));
  TERN_ASSIGN_OR_RETURN(f->tensors_, ParseHeader(f->file_.data(), f->file_.size(), path));
  for (auto& t : f->tensors_) t.file = &f->file_.path();
  if (memory == TensorMemory::kHugePageCopy) {
    constexpr size_t kAlign = 64;
    size_t total = 0;
    for (const TensorView& t : f->tensors_) total += (t.nbytes + kAlign - 1) / kAlign * kAlign;
    if (total > 0) {
      auto mem = AllocateHugePages(total);
      if (!mem.ok()) return Status::Errorf("a copy of {}'s tensors: {}", path, mem.status().message());
      f->copy_ = std::move(*mem);
      size_t at = 0;
      for (TensorView& t : f->tensors_) {
        std::memcpy(f->copy_.get() + at, t.data, t.nbytes);
        t.data = f->copy_.get() + at;
        at += (t.nbytes + kAlign - 1) / kAlign * kAlign;
      }
      // Read-only from here on, as the mapping was (a stray write faults); whole 2 MiB pages.
      constexpr size_t kHuge = size_t(2) << 20;
      (void)::mprotect(f->copy_.get(), (total + kHuge - 1) / kHuge * kHuge, PROT_READ);
      f->file_.DropResidentPages();  // nothing reads the mapped tensors now
    }
  }
  return f;
}

Result<TensorStore> TensorStore::OpenDir(const std::string& dir, TensorMemory memory) {
  std::vector<std::string> files;
  const fs::path index = fs::path(dir) / "model.safetensors.index.json";
  std::error_code ec;
  if (fs::exists(index, ec)) {
    TERN_ASSIGN_OR_RETURN(std::string text, ReadFileToString(index.string()));
    json j = json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
      return Status::Errorf("{}: expected a JSON object with a \"weight_map\" object", index.string());
    std::set<std::string> shard_names;
    for (auto& [name, shard] : j["weight_map"].items()) {
      if (!shard.is_string()) return Status::Errorf("{}: weight_map['{}'] is not a file name", index.string(), name);
      const std::string s = shard.get<std::string>();
      if (s.find('/') != std::string::npos || s == ".." || s.empty())
        return Status::Errorf("{}: shard name '{}' must be a plain file name", index.string(), s);
      shard_names.insert(s);
    }
    for (const auto& s : shard_names) files.push_back((fs::path(dir) / s).string());
  } else if (fs::exists(fs::path(dir) / "model.safetensors", ec)) {
    files.push_back((fs::path(dir) / "model.safetensors").string());
  } else {
    for (const auto& e : fs::directory_iterator(dir, ec))
      if (e.path().extension() == ".safetensors") files.push_back(e.path().string());
    std::sort(files.begin(), files.end());
    if (ec) return Status::Errorf("cannot list {}: {}", dir, ec.message());
  }
  if (files.empty()) return Status::Errorf("{}: no model.safetensors, index, or *.safetensors file", dir);

  TensorStore store;
  for (const auto& path : files) {
    TERN_ASSIGN_OR_RETURN(auto f, SafetensorsFile::Open(path, memory));
    for (const auto& t : f->tensors()) {
      if (store.by_name_.count(t.name))
        return Status::Errorf("tensor '{}' appears in both {} and {}", t.name, *store.by_name_[t.name].file, path);
      store.by_name_[t.name] = t;
    }
    store.files_.push_back(std::move(f));
  }
  return store;
}

const TensorView* TensorStore::Find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &it->second;
}

void TensorStore::MarkUsed(const std::string& name) const { (*used_)[name] = true; }

Result<const TensorView*> TensorStore::Get(const std::string& name, const std::vector<int64_t>& shape) const {
  const TensorView* t = Find(name);
  if (!t) return Status::Errorf("missing tensor '{}' (expected shape [{}])", name, fmt::join(shape, ", "));
  if (t->shape != shape)
    return Status::Errorf("{}: tensor '{}' has shape {}, expected [{}]", *t->file, name, t->ShapeString(),
                          fmt::join(shape, ", "));
  MarkUsed(name);
  return t;
}

std::vector<std::string> TensorStore::Unused() const {
  std::vector<std::string> out;
  for (const auto& [name, t] : by_name_)
    if (!used_->count(name)) out.push_back(name);
  return out;
}

Status WriteSafetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                        const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    uint64_t count = 1;
    for (int64_t d : t.shape) count *= uint64_t(d);
    if (count * DTypeSize(t.dtype) != t.bytes.size())
      return Status::Errorf("writing {}: tensor '{}' has {} bytes for shape [{}] of {}", path, t.name, t.bytes.size(),
                            fmt::join(t.shape, ", "), DTypeName(t.dtype));
    header[t.name] = {{"dtype", DTypeName(t.dtype)}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  std::string h = header.dump();
  h.append((8 - h.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = char((uint64_t(h.size()) >> (8 * i)) & 0xff);
  out += h;
  out.reserve(out.size() + offset);
  for (const auto& t : tensors) out += t.bytes;
  return WriteStringToFile(path, out);
}

}  // namespace tern
