// Safetensors checkpoints: parsing, validation and zero-copy access.
//
// Format: 8-byte little-endian header length N, N bytes of JSON
//   {"name": {"dtype": "BF16", "shape": [..], "data_offsets": [begin, end]}, ...,
//    "__metadata__": {...}}
// then the data section; offsets are relative to its start.
// Everything is validated before any tensor is handed out: header size, JSON
// size, dtype names, shape x dtype size == byte range, ranges inside the file
// and not overlapping. Errors name the file and the tensor.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "base/mapped_file.h"
#include "base/status.h"

namespace tern {

// A read-only view of one tensor's bytes inside a mapped file.
struct TensorView {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  const uint8_t* data = nullptr;  // not necessarily aligned
  size_t nbytes = 0;
  const std::string* file = nullptr;  // for error messages

  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  std::string ShapeString() const;
};

// Maximum accepted JSON header, as in the reference implementation (100 MB).
inline constexpr uint64_t kMaxSafetensorsHeader = 100u << 20;

// How a model's tensors are held. kMapped: in the mapped files (4 KiB pages,
// shared with the page cache; safetensors places tensors only 8-byte
// aligned). kHugePageCopy (--huge-pages): each tensor copied to a 64-byte
// boundary of anonymous memory in 2 MiB pages (madvised; read-only after),
// the mapped pages then dropped from the process. Decode streams every
// weight once a token: the NVFP4 GEMV reads rows at a 64-byte boundary 1.07-
// 1.21x faster than 16 or 24 bytes past one (BM_MatMul<NVFP4>/1, Zen 5), and
// huge pages spare a TLB miss per 4 KiB.
enum class TensorMemory { kMapped, kHugePageCopy };

// One .safetensors file, mapped and validated.
class SafetensorsFile {
 public:
  static Result<std::unique_ptr<SafetensorsFile>> Open(const std::string& path,
                                                       TensorMemory memory = TensorMemory::kMapped);
  // Validates an in-memory image (used by tests and by Open).
  static Result<std::vector<TensorView>> ParseHeader(const uint8_t* data, size_t size, const std::string& path);

  const std::vector<TensorView>& tensors() const { return tensors_; }
  const std::string& path() const { return file_.path(); }
  void DropResidentPages() const { file_.DropResidentPages(); }

 private:
  MappedFile file_;
  std::vector<TensorView> tensors_;
  std::shared_ptr<uint8_t> copy_;  // kHugePageCopy: the tensors, each at a 64-byte boundary
};

// All tensors of a model directory: model.safetensors, or the shards listed in
// model.safetensors.index.json, or every *.safetensors file when neither exists.
class TensorStore {
 public:
  static Result<TensorStore> OpenDir(const std::string& dir, TensorMemory memory = TensorMemory::kMapped);

  // nullptr when absent.
  const TensorView* Find(const std::string& name) const;
  // The tensor, checked against an expected dtype set and shape; marks it used.
  Result<const TensorView*> Get(const std::string& name, const std::vector<int64_t>& shape) const;
  // Marks a tensor as consumed by the architecture (Get does this too).
  void MarkUsed(const std::string& name) const;
  // Names of tensors never marked used (the architecture did not expect them).
  std::vector<std::string> Unused() const;

  const std::map<std::string, TensorView>& all() const { return by_name_; }
  // MappedFile::DropResidentPages for every file.
  void DropResidentPages() const {
    for (const auto& f : files_) f->DropResidentPages();
  }

 private:
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, TensorView> by_name_;
  std::shared_ptr<std::map<std::string, bool>> used_ = std::make_shared<std::map<std::string, bool>>();
};

// Writing (for `tern synth` and `tern quantize`): tensors are laid out in the
// given order, 8-byte aligned ranges, with an optional __metadata__ map.
struct TensorToWrite {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  std::string bytes;  // raw little-endian contents
};
Status WriteSafetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                        const std::map<std::string, std::string>& metadata = {});

}  // namespace tern
