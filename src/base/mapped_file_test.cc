// MappedFile and ReadFileToString accept regular files only: a FIFO, a device
// or a directory is an immediate error naming the path (a blocking open() on a
// FIFO once hung model loading forever), and a text file over its size cap is
// refused before it is read.
#include "base/mapped_file.h"

#include <sys/stat.h>

#include <filesystem>

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

// kHugePageCopy holds the file's bytes exactly (sizes below, at and past a
// 2 MiB page, and empty), 2 MiB-aligned, and keeps them through
// DropResidentPages (dropping an anonymous copy's pages would zero them);
// moving it keeps the copy alive, the moved-from one is empty.
TEST(MappedFile, HugePageCopyHoldsTheBytes) {
  const std::string dir = FreshDir("mf_huge");
  for (size_t size : {size_t(1), size_t(4097), size_t(2) << 20, (size_t(5) << 20) + 3}) {
    SCOPED_TRACE(size);
    std::string text(size, '\0');
    for (size_t i = 0; i < size; ++i) text[i] = char((i * 131 + i / 4096) & 0xFF);
    const std::string path = dir + "/w" + std::to_string(size);
    ASSERT_TRUE(WriteStringToFile(path, text).ok());
    auto m = MappedFile::Open(path, MappedFile::Mode::kHugePageCopy);
    ASSERT_TRUE(m.ok()) << m.status().message();
    EXPECT_TRUE(m->huge_page_copy());
    ASSERT_EQ(m->size(), size);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(m->data()) % (size_t(2) << 20), 0u);
    m->DropResidentPages();
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(m->data()), m->size()), text);
    MappedFile moved = std::move(*m);
    EXPECT_EQ(m->data(), nullptr);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(moved.data()), moved.size()), text);
  }
  ASSERT_TRUE(WriteStringToFile(dir + "/empty", "").ok());
  auto e = MappedFile::Open(dir + "/empty", MappedFile::Mode::kHugePageCopy);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->size(), 0u);
  ExpectErrorWith(MappedFile::Open(dir + "/absent", MappedFile::Mode::kHugePageCopy).status(), "cannot open");
  auto plain = MappedFile::Open(dir + "/w4097");
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->huge_page_copy());
}

TEST(MappedFile, AllocateHugePagesIsAlignedAndZeroed) {
  auto mem = AllocateHugePages((size_t(3) << 20) + 5);
  ASSERT_TRUE(mem.ok()) << mem.status().message();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(mem->get()) % (size_t(2) << 20), 0u);
  for (size_t i = 0; i < (size_t(3) << 20) + 5; i += 4093) EXPECT_EQ((*mem).get()[i], 0);
}

}  // namespace
}  // namespace tern
