#include "base/mapped_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tern {

namespace {

const char* FileKind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a regular file";
}

// Opens `path` for reading only if it is a regular file. O_NONBLOCK makes
// open() return at once on a FIFO (a blocking open would wait forever for a
// writer); it changes nothing for a regular file's reads or mmap.
Result<int> OpenRegular(const std::string& path, struct stat* st) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return Status::Errorf("cannot open {}: {}", path, std::strerror(errno));
  if (::fstat(fd, st) != 0) {
    const int err = errno;
    ::close(fd);
    return Status::Errorf("cannot stat {}: {}", path, std::strerror(err));
  }
  if (!S_ISREG(st->st_mode)) {
    ::close(fd);
    return Status::Errorf("{} is {}, not a regular file", path, FileKind(st->st_mode));
  }
  return fd;
}

}  // namespace

Result<std::shared_ptr<uint8_t>> AllocatePages(size_t bytes, bool huge, bool* advised) {
  constexpr size_t kHuge = size_t(2) << 20;
  if (bytes == 0 || bytes > (size_t(1) << 60)) return Status::Errorf("cannot allocate {} bytes", bytes);
  const size_t len = (bytes + kHuge - 1) / kHuge * kHuge, region = len + kHuge;  // room to align the start
  void* r = ::mmap(nullptr, region, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (r == MAP_FAILED) return Status::Errorf("cannot allocate {} bytes: {}", region, std::strerror(errno));
  uint8_t* a = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(r) + kHuge - 1) / kHuge * kHuge);
  const bool ok = ::madvise(a, len, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE) == 0;  // advice (THP off: refused)
  if (advised) *advised = ok;
  return std::shared_ptr<uint8_t>(a, [r, region](uint8_t*) { ::munmap(r, region); });
}

namespace {

// The number after `key` in a /proc file of "Key:   N kB" lines, in bytes; -1 when absent.
int64_t ProcKilobytes(const char* path, const char* key) {
  std::FILE* f = std::fopen(path, "r");
  if (f == nullptr) return -1;
  char line[256];
  long long kb = -1;
  const size_t n = std::strlen(key);
  while (std::fgets(line, sizeof line, f) != nullptr)
    if (std::strncmp(line, key, n) == 0 && std::sscanf(line + n, " %lld", &kb) == 1) break;
  std::fclose(f);
  return kb < 0 ? -1 : int64_t(kb) * 1024;
}

}  // namespace

int64_t AnonHugePageBytes() { return ProcKilobytes("/proc/self/smaps_rollup", "AnonHugePages:"); }
int64_t FilePmdMappedBytes() { return ProcKilobytes("/proc/self/smaps_rollup", "FilePmdMapped:"); }
int64_t HugePageBytes() {
  const int64_t anon = AnonHugePageBytes(), file = FilePmdMappedBytes();
  return anon < 0 || file < 0 ? -1 : anon + file;
}
ResidentPages FileMappingPages(std::string_view suffix) {
  std::FILE* f = std::fopen("/proc/self/smaps", "r");
  if (f == nullptr) return {};
  ResidentPages r{0, 0};
  bool counted = false;  // the current mapping is one of the files
  char line[4096];
  while (std::fgets(line, sizeof line, f) != nullptr) {
    std::string_view l(line);
    while (!l.empty() && (l.back() == '\n' || l.back() == ' ')) l.remove_suffix(1);
    unsigned long lo = 0, hi = 0;
    const size_t colon = l.find(':'), space = l.find(' ');
    if (std::sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && space != std::string_view::npos && colon > space) {
      counted = l.size() >= suffix.size() && l.substr(l.size() - suffix.size()) == suffix;  // a mapping's header
      continue;
    }
    long long kb = 0;
    if (counted && std::sscanf(line, "Rss: %lld kB", &kb) == 1) r.resident += int64_t(kb) * 1024;
    if (counted && std::sscanf(line, "FilePmdMapped: %lld kB", &kb) == 1) r.huge += int64_t(kb) * 1024;
  }
  std::fclose(f);
  return r;
}
int64_t AvailableMemoryBytes() { return ProcKilobytes("/proc/meminfo", "MemAvailable:"); }

Result<MappedFile> MappedFile::Open(const std::string& path) {
  struct stat st {};
  TERN_ASSIGN_OR_RETURN(const int fd, OpenRegular(path, &st));
  MappedFile f;
  f.path_ = path;
  f.size_ = size_t(st.st_size);
  if (f.size_ > 0) {
    void* p = ::mmap(nullptr, f.size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      return Status::Errorf("cannot map {}: {}", path, std::strerror(err));
    }
    f.data_ = static_cast<const uint8_t*>(p);
    // Advice: refused where THP is "never" or the kernel predates it for files, which changes nothing else.
    ::madvise(p, f.size_, MADV_HUGEPAGE);
  }
  ::close(fd);
  return f;
}

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
  if (this != &o) {
    if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
    data_ = o.data_;
    size_ = o.size_;
    path_ = std::move(o.path_);
    o.data_ = nullptr;
    o.size_ = 0;
  }
  return *this;
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

void MappedFile::DropResidentPages() const {
  // A read-only private mapping never written: MADV_DONTNEED only unmaps the
  // pages from this process; the page cache keeps them and a later access
  // faults them in from the file again.
  if (data_ && size_ > 0) ::madvise(const_cast<uint8_t*>(data_), size_, MADV_DONTNEED);
}

Result<std::string> ReadFileToString(const std::string& path, size_t max_bytes) {
  struct stat st {};
  TERN_ASSIGN_OR_RETURN(const int fd, OpenRegular(path, &st));
  if (uint64_t(st.st_size) > max_bytes) {
    ::close(fd);
    return Status::Errorf("{} is {} bytes, more than the {} bytes accepted for it", path, uint64_t(st.st_size),
                          max_bytes);
  }
  std::string out(size_t(st.st_size), '\0');
  size_t got = 0;
  while (got < out.size()) {
    const ssize_t n = ::read(fd, out.data() + got, out.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return Status::Errorf("error reading {}: {}", path, std::strerror(err));
    }
    if (n == 0) break;  // the file shrank while being read
    got += size_t(n);
  }
  ::close(fd);
  out.resize(got);
  return out;
}

Status WriteStringToFile(const std::string& path, std::string_view contents) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return Status::Errorf("cannot create {}: {}", path, std::strerror(errno));
  out.write(contents.data(), std::streamsize(contents.size()));
  out.close();
  if (!out) return Status::Errorf("error writing {}", path);
  return Status::Ok();
}

}  // namespace tern
