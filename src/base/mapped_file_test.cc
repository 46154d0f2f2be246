// MappedFile and ReadFileToString accept regular files only: a FIFO, a device
// or a directory is an immediate error naming the path (a blocking open() on a
// FIFO once hung model loading forever), and a text file over its size cap is
// refused before it is read.
#include "base/mapped_file.h"

#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace tern {
namespace {

std::string FreshDir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

void ExpectErrorWith(const Status& s, const std::string& fragment) {
  ASSERT_FALSE(s.ok()) << "expected an error with: " << fragment;
  EXPECT_NE(s.message().find(fragment), std::string::npos) << s.message();
}

TEST(MappedFile, FifoIsAnErrorNotAHang) {
  const std::string dir = FreshDir("mf_fifo");
  const std::string fifo = dir + "/config.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // No writer ever opens the FIFO: a blocking open would never return.
  ExpectErrorWith(ReadFileToString(fifo).status(), fifo + " is a FIFO, not a regular file");
  ExpectErrorWith(MappedFile::Open(fifo).status(), fifo + " is a FIFO, not a regular file");
}

TEST(MappedFile, DevicesAndDirectoriesAreErrors) {
  ExpectErrorWith(ReadFileToString("/dev/zero").status(), "/dev/zero is a character device");
  ExpectErrorWith(MappedFile::Open("/dev/null").status(), "/dev/null is a character device");
  const std::string dir = FreshDir("mf_dir");
  ExpectErrorWith(ReadFileToString(dir).status(), "is a directory");
  ExpectErrorWith(MappedFile::Open(dir + "/absent").status(), "cannot open");
}

TEST(MappedFile, ReadsRegularFilesAndEnforcesTheCap) {
  const std::string dir = FreshDir("mf_read");
  const std::string path = dir + "/a.txt";
  const std::string text = std::string("hello\0world", 11) + std::string(5000, 'x');
  ASSERT_TRUE(WriteStringToFile(path, text).ok());
  auto r = ReadFileToString(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, text);
  ExpectErrorWith(ReadFileToString(path, 100).status(), "is 5011 bytes, more than the 100 bytes");
  auto m = MappedFile::Open(path);
  ASSERT_TRUE(m.ok());
  ASSERT_EQ(m->size(), text.size());
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(m->data()), m->size()), text);
  ASSERT_TRUE(WriteStringToFile(dir + "/empty", "").ok());
  auto e = ReadFileToString(dir + "/empty");
  ASSERT_TRUE(e.ok());
  EXPECT_TRUE(e->empty());
}

// AllocatePages: 2 MiB-aligned, zeroed, writable to its last byte, for either
// page size; 0 bytes is an error.
TEST(MappedFile, AllocatePagesIsAlignedAndZeroed) {
  for (bool huge : {true, false}) {
    const size_t n = (size_t(3) << 20) + 5;
    auto mem = AllocatePages(n, huge);
    ASSERT_TRUE(mem.ok()) << mem.status().message();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(mem->get()) % (size_t(2) << 20), 0u);
    for (size_t i = 0; i < n; i += 4093) EXPECT_EQ(mem->get()[i], 0);
    mem->get()[n - 1] = 7;
  }
  EXPECT_FALSE(AllocatePages(0, true).ok());
}

// The VmFlags of the mapping holding `p` in /proc/self/smaps ("" if none).
std::string VmFlagsOf(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool in = false;
  const auto a = reinterpret_cast<uintptr_t>(p);
  while (std::getline(smaps, line)) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find(':') > line.find(' ')) in = a >= lo && a < hi;
    if (in && line.rfind("VmFlags:", 0) == 0) return line;
  }
  return "";
}

// A weight file's mapping is advised MADV_HUGEPAGE ("hg" in its VmFlags), so
// that where the page cache keeps large folios it is read in 2 MiB pages, and
// FilePmdMappedBytes/HugePageBytes read what the kernel reports.
TEST(MappedFile, MappingIsAdvisedHugePages) {
  if (!std::filesystem::exists("/sys/kernel/mm/transparent_hugepage/enabled"))
    GTEST_SKIP() << "this kernel has no transparent huge pages: MADV_HUGEPAGE is refused";
  const std::string dir = FreshDir("mf_huge");
  const std::string path = dir + "/w.safetensors";
  ASSERT_TRUE(WriteStringToFile(path, std::string(size_t(4) << 20, 'w')).ok());
  auto m = MappedFile::Open(path);
  ASSERT_TRUE(m.ok()) << m.status().message();
  const std::string flags = VmFlagsOf(m->data());
  ASSERT_FALSE(flags.empty()) << "no /proc/self/smaps entry for the mapping";
  EXPECT_NE((flags + " ").find(" hg "), std::string::npos) << flags;
  EXPECT_GE(FilePmdMappedBytes(), 0);
  EXPECT_GE(HugePageBytes(), FilePmdMappedBytes());
  // Once read, all 4 MiB are resident and counted under the file's suffix, no other file's.
  unsigned sum = 0;
  for (size_t i = 0; i < m->size(); i += 4096) sum += m->data()[i];
  EXPECT_EQ(sum, unsigned('w') * unsigned(m->size() / 4096));
  const ResidentPages pages = FileMappingPages("/w.safetensors");
  EXPECT_EQ(pages.resident, int64_t(4) << 20);
  EXPECT_GE(pages.huge, 0);
  EXPECT_LE(pages.huge, pages.resident);
  EXPECT_EQ(FileMappingPages("/no-such-file.safetensors").resident, 0);
}

}  // namespace
}  // namespace tern
