// MappedFile: a read-only memory map of a whole file (RAII).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "base/status.h"

namespace tern {

class MappedFile {
 public:
  // Maps `path` read-only. Only regular files: a FIFO, device or directory is
  // an error at once (never a blocking open). Errors name the path and the OS reason.
  // The mapping is advised MADV_HUGEPAGE: where the filesystem keeps large
  // folios in the page cache (ext4 and xfs on recent kernels), pages read in
  // through it come in 2 MiB folios mapped whole, which decode, streaming
  // every weight once per token, reads faster (FilePmdMappedBytes says how
  // much it got; pages the cache already holds small stay small).
  static Result<MappedFile> Open(const std::string& path);

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
  // the weights keeps only what it uses resident.
  void DropResidentPages() const;

 private:
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

// Anonymous read-write memory of `bytes` (> 0), zeroed, its start aligned to
// 2 MiB and madvised MADV_HUGEPAGE when `huge` (4 KiB pages where the kernel
// refuses: *advised says whether it accepted), MADV_NOHUGEPAGE when not (4
// KiB pages as a file mapping has, even where THP is "always"); the deleter
// unmaps it. An error names the size and the OS reason.
Result<std::shared_ptr<uint8_t>> AllocatePages(size_t bytes, bool huge, bool* advised = nullptr);
inline Result<std::shared_ptr<uint8_t>> AllocateHugePages(size_t bytes) { return AllocatePages(bytes, true); }
// This process's anonymous memory in transparent huge pages (AnonHugePages of
// /proc/self/smaps_rollup), in bytes; -1 when unknown.
int64_t AnonHugePageBytes();
// This process's file mappings held by 2 MiB page-table entries
// (FilePmdMapped of /proc/self/smaps_rollup), in bytes; -1 when unknown.
int64_t FilePmdMappedBytes();
// Both: the memory this process reads through huge pages.
int64_t HugePageBytes();
// The resident bytes of this process's mappings of files whose names end in
// `suffix`, and how many of them are mapped by 2 MiB page-table entries
// (Rss and FilePmdMapped of /proc/self/smaps); both -1 when unknown.
struct ResidentPages {
  int64_t resident = -1, huge = -1;
};
ResidentPages FileMappingPages(std::string_view suffix);
// MemAvailable of /proc/meminfo, in bytes; -1 when unknown.
int64_t AvailableMemoryBytes();

// Reads a whole (small) regular file into a string; a FIFO, device or
// directory, or a file over `max_bytes`, is an error naming the path.
inline constexpr size_t kMaxTextFileBytes = size_t(1) << 30;
Result<std::string> ReadFileToString(const std::string& path, size_t max_bytes = kMaxTextFileBytes);
// Writes a string to a file, replacing it.
Status WriteStringToFile(const std::string& path, std::string_view contents);

}  // namespace tern
