// Malformed and valid safetensors files: every defect gives a clear error that
// names the file and the tensor, never a crash or an out-of-bounds read.
#include "model/safetensors.h"

#include <sys/stat.h>

#include <cstring>
#include <filesystem>

#include <gtest/gtest.h>

namespace tern {
namespace {

// Builds a file image from a header JSON string and a data section.
std::string Image(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[size_t(i)] = char((n >> (8 * i)) & 0xff);
  return out + header + data;
}

Status Parse(const std::string& image) {
  auto r = SafetensorsFile::ParseHeader(reinterpret_cast<const uint8_t*>(image.data()), image.size(), "f.safetensors");
  return r.ok() ? Status::Ok() : r.status();
}

void ExpectError(const std::string& image, const std::string& fragment) {
  Status s = Parse(image);
  ASSERT_FALSE(s.ok()) << "accepted a malformed file; expected an error with: " << fragment;
  EXPECT_NE(s.message().find(fragment), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("f.safetensors"), std::string::npos) << s.message();
}

TEST(Safetensors, ParsesValidFile) {
  const std::string img = Image(
      R"({"__metadata__":{"format":"pt"},"a":{"dtype":"BF16","shape":[2,3],"data_offsets":[0,12]},"b":{"dtype":"F32","shape":[],"data_offsets":[12,16]}})",
      std::string(16, '\x01'));
  auto r = SafetensorsFile::ParseHeader(reinterpret_cast<const uint8_t*>(img.data()), img.size(), "f.safetensors");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].name, "a");
  EXPECT_EQ((*r)[0].shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ((*r)[0].nbytes, 12u);
  EXPECT_EQ((*r)[1].numel(), 1);
}

TEST(Safetensors, RejectsMalformedFiles) {
  const std::string t = R"("t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  ExpectError("abc", "too small");
  std::string huge(8, '\0');
  huge[7] = 0x10;  // 2^60-byte header
  ExpectError(huge, "exceeds");
  ExpectError(Image("{", "") .substr(0, 8) + std::string("{"), "not valid JSON");
  {
    std::string img = Image("{" + t + "}", std::string(8, '\0'));
    img[0] = char(200);  // header length past the end
    ExpectError(img, "past the end");
  }
  ExpectError(Image("[1,2]", ""), "not a JSON object");
  ExpectError(Image(R"({"t":{"dtype":"F8_E5M2","shape":[2],"data_offsets":[0,2]}})", std::string(2, '\0')), "unsupported dtype 'F8_E5M2'");
  ExpectError(Image(R"({"t":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", std::string(8, '\0')), "needs 12 bytes but data_offsets span 8");
  ExpectError(Image(R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0,16]}})", std::string(8, '\0')), "run past");
  ExpectError(Image(R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", std::string(8, '\0')), "reversed");
  ExpectError(Image(R"({"t":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", std::string(8, '\0')), "non-negative");
  ExpectError(Image(R"({"t":{"dtype":"F32","shape":[2]}})", std::string(8, '\0')), "data_offsets");
  ExpectError(Image(R"({"t":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", std::string(8, '\0')), "overflows");
  // 2^62 elements pass the element-count check, but 2^62 x 4 bytes wraps to 0
  // (it once loaded as an empty tensor and aborted in warm-up).
  ExpectError(Image(R"({"t":{"dtype":"F32","shape":[2147483648,2147483648],"data_offsets":[0,0]}})", ""),
              "more than 2^64 bytes");
  ExpectError(Image(R"({"t":{"dtype":"BF16","shape":[4611686018427387904,2],"data_offsets":[0,0]}})", ""),
              "overflows");
  ExpectError(Image(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", std::string(12, '\0')), "overlaps");
  ExpectError(Image(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", std::string(8, '\0')), "gap of 4 bytes");
  ExpectError(Image(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", std::string(8, '\0')), "data section has 8 bytes");
  ExpectError(Image("{" + t + ", \"__metadata__\": 3}", std::string(8, '\0')), "__metadata__");
}

TEST(Safetensors, WriterRoundTripsAndStoreChecksShapes) {
  const std::string dir = ::testing::TempDir() + "/st_roundtrip";
  std::filesystem::create_directories(dir);
  std::vector<TensorToWrite> ts = {{"w", DType::kBF16, {2, 2}, std::string("\x80\x3f\x00\x40\x00\x00\x80\xbf", 8)},
                                   {"b", DType::kF32, {3}, std::string(12, '\0')}};
  ASSERT_TRUE(WriteSafetensors(dir + "/model.safetensors", ts, {{"format", "pt"}}).ok());
  auto store = TensorStore::OpenDir(dir);
  ASSERT_TRUE(store.ok()) << store.status().message();
  auto w = store->Get("w", {2, 2});
  ASSERT_TRUE(w.ok());
  EXPECT_EQ((*w)->dtype, DType::kBF16);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>((*w)->data), 8), ts[0].bytes);
  auto bad = store->Get("b", {4});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("has shape [3], expected [4]"), std::string::npos) << bad.status().message();
  auto missing = store->Get("nope", {1});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("missing tensor 'nope'"), std::string::npos);
  EXPECT_EQ(store->Unused(), std::vector<std::string>{"b"});
}

// The same files held as copies in huge pages (--huge-pages): every tensor's
// bytes equal the mapped ones', each at a 64-byte boundary (the mapped ones
// are only 8-byte aligned), in memory the process cannot write.
TEST(Safetensors, HugePageCopyHoldsTheSameTensorsAligned) {
  const std::string dir = ::testing::TempDir() + "/st_huge";
  std::filesystem::create_directories(dir);
  std::string big(3 << 20, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = char(i * 7 + i / 1000);
  std::vector<TensorToWrite> ts = {{"a", DType::kU8, {int64_t(big.size())}, big},
                                   {"b", DType::kF32, {3}, std::string("\x00\x00\x80\x3f\x00\x00\x00\x40\x00\x00\x40\x40", 12)},
                                   {"c", DType::kU8, {5}, std::string("abcde")},
                                   {"d", DType::kU8, {70}, std::string(70, 'z')}};
  ASSERT_TRUE(WriteSafetensors(dir + "/model.safetensors", ts).ok());
  auto mapped = TensorStore::OpenDir(dir);
  auto copied = TensorStore::OpenDir(dir, TensorMemory::kHugePageCopy);
  ASSERT_TRUE(mapped.ok() && copied.ok());
  int misaligned_when_mapped = 0;
  for (const auto& [name, want] : mapped->all()) {
    const TensorView* got = copied->Find(name);
    ASSERT_NE(got, nullptr) << name;
    EXPECT_NE(got->data, want.data) << name;
    ASSERT_EQ(got->nbytes, want.nbytes) << name;
    EXPECT_EQ(std::memcmp(got->data, want.data, want.nbytes), 0) << name;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(got->data) % 64, 0u) << name;
    misaligned_when_mapped += reinterpret_cast<uintptr_t>(want.data) % 64 != 0;
  }
  EXPECT_GT(misaligned_when_mapped, 0);  // (so the test shows the copy aligning something)
  // Checked against shapes like the mapped store.
  auto b = copied->Get("b", {3});
  ASSERT_TRUE(b.ok());
  float f[3];
  std::memcpy(f, (*b)->data, 12);
  EXPECT_EQ(f[0], 1.0f);
  EXPECT_EQ(f[2], 3.0f);
}

// A FIFO (or any non-regular file) in the model folder once blocked loading
// forever in open(); now it is an error at once naming the path.
TEST(Safetensors, NonRegularFilesAreErrorsNotHangs) {
  const std::string dir = ::testing::TempDir() + "/st_fifo";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  ASSERT_EQ(::mkfifo((dir + "/model.safetensors").c_str(), 0600), 0);
  auto s = TensorStore::OpenDir(dir);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("model.safetensors is a FIFO, not a regular file"), std::string::npos)
      << s.status().message();
  std::filesystem::remove(dir + "/model.safetensors");
  std::filesystem::create_directories(dir + "/model.safetensors");  // a directory by that name
  s = TensorStore::OpenDir(dir);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("is a directory"), std::string::npos) << s.status().message();
}

TEST(Safetensors, MissingDirectoryAndBadIndex) {
  EXPECT_FALSE(TensorStore::OpenDir("/nonexistent/dir").ok());
  const std::string dir = ::testing::TempDir() + "/st_badindex";
  std::filesystem::create_directories(dir);
  ASSERT_TRUE(WriteStringToFile(dir + "/model.safetensors.index.json", R"({"weight_map":{"a":"../etc/passwd"}})").ok());
  auto s = TensorStore::OpenDir(dir);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("plain file name"), std::string::npos) << s.status().message();
  ASSERT_TRUE(WriteStringToFile(dir + "/model.safetensors.index.json", R"({"weight_map":{"a":"missing.safetensors"}})").ok());
  s = TensorStore::OpenDir(dir);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("missing.safetensors"), std::string::npos) << s.status().message();
}

}  // namespace
}  // namespace tern
