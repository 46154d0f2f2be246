// MappedFile: a read-only memory map of a whole file (RAII).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "base/status.h"

namespace tern {

class MappedFile {
 public:
  // kMap: the file's pages, mapped (shared with the page cache, 4 KiB pages).
  // kHugePageCopy: the file read into anonymous memory aligned to 2 MiB and
  // madvised MADV_HUGEPAGE: decode streams every weight once a token, and
  // with 4 KiB pages each page costs a TLB miss and stops the hardware
  // prefetchers (1.02-1.18x decode measured: README "Huge pages"). Where the
  // kernel refuses huge pages it is still a plain copy.
  enum class Mode { kMap, kHugePageCopy };

  // Maps (or copies) `path` read-only. Only regular files: a FIFO, device or
  // directory is an error at once (never a blocking open). Errors name the
  // path and the OS reason.
  static Result<MappedFile> Open(const std::string& path, Mode mode = Mode::kMap);

  MappedFile() = default;
  MappedFile(MappedFile&& o) noexcept { *this = std::move(o); }
  MappedFile& operator=(MappedFile&& o) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // Lets the OS drop the pages read so far from this process (they are read
  // again from the file when touched): a rank that copied out its slice of
  // the weights keeps only what it uses resident. A kHugePageCopy keeps its
  // copy (nothing to read it again from).
  void DropResidentPages() const;
  bool huge_page_copy() const { return copy_ != nullptr; }

 private:
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
  std::shared_ptr<uint8_t> copy_;  // kHugePageCopy: the memory holding data_
  void Release();
};

// Anonymous read-write memory of `bytes` (> 0), zeroed, its start aligned to
// 2 MiB and madvised MADV_HUGEPAGE (4 KiB pages where the kernel refuses);
// the deleter unmaps it. An error names the size and the OS reason.
Result<std::shared_ptr<uint8_t>> AllocateHugePages(size_t bytes);

// Reads a whole (small) regular file into a string; a FIFO, device or
// directory, or a file over `max_bytes`, is an error naming the path.
inline constexpr size_t kMaxTextFileBytes = size_t(1) << 30;
Result<std::string> ReadFileToString(const std::string& path, size_t max_bytes = kMaxTextFileBytes);
// Writes a string to a file, replacing it.
Status WriteStringToFile(const std::string& path, std::string_view contents);

}  // namespace tern
