// Helpers shared by the kernel tests: random data, weights in each dtype, and
// running a test body once per SIMD target this CPU supports.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "kernels/cpu_features.h"
#include "kernels/ops.h"
#include "kernels/simd_target.h"

namespace tern::kernels::testing {

// Runs body() once per SIMD target, with the target's name in failure traces;
// on AVX3, once more per extension path the CPU has (cpu_features.h: amx,
// avx512-bf16, the AVX-512 VNNI kernels, then without them).
template <class F>
void ForEachSimdTarget(F&& body) {
  for (int64_t target : SimdTargetsForTest()) {
    SetSimdTargetForTest(target);
    SCOPED_TRACE(std::string("SIMD target ") + SimdTargetNameOf(target));
    EXPECT_STREQ(SimdTargetName(), SimdTargetNameOf(target));
    std::vector<std::string> paths = {"auto"};
    if (std::string(SimdTargetNameOf(target)) == "AVX3" && DetectedCpuExtensions().avx512_vnni) {
      paths = {"avx512-vnni", "avx512"};
      const std::vector<std::string> have = AvailableCpuPaths();
      for (const char* p : {"avx512-bf16", "amx"})
        if (std::find(have.begin(), have.end(), p) != have.end()) paths.insert(paths.begin(), p);
    }
    for (const std::string& path : paths) {
      SCOPED_TRACE("cpu path " + path);
      EXPECT_TRUE(SetCpuPath(path).ok());
      EXPECT_STREQ(SimdTargetName(), SimdTargetNameOf(target));
      body();
    }
    EXPECT_TRUE(SetCpuPath("auto").ok());
  }
  SetSimdTargetForTest(0);
}

// ForEachSimdTarget for the NVFP4 kernels: on the paths that run the AVX-512
// VNNI kernels, body() once per way they decode W's codes (cpu_features.h
// UseNvfp4Vpermb: vpshufb, and vpermb where the CPU has VBMI), then the
// default restored.
template <class F>
void ForEachNvfp4Path(F&& body) {
  ForEachSimdTarget([&] {
    if (std::string(SimdTargetName()) != "AVX3" || !UseAvx512Vnni()) return body();
    std::vector<const char*> modes = {"vpshufb"};
    if (DetectedCpuExtensions().avx512_vbmi) modes.push_back("vpermb");
    for (const char* mode : modes) {
      SCOPED_TRACE(std::string("NVFP4 codes by ") + mode);
      EXPECT_TRUE(SetNvfp4CodeDecode(mode).ok());
      body();
    }
    EXPECT_TRUE(SetNvfp4CodeDecode("auto").ok());
  });
}

// Runs body once per FP8 decode of the GEMV (cpu_features.h
// UseFp8IntegerDecode), both on any CPU, then restores the default.
template <class F>
void ForEachFp8Decode(F&& body) {
  for (const char* mode : {"int", "f16"}) {
    SCOPED_TRACE(std::string("FP8 decode ") + mode);
    EXPECT_TRUE(SetFp8Decode(mode).ok());
    body();
  }
  EXPECT_TRUE(SetFp8Decode("auto").ok());
}

inline std::vector<float> RandomFloats(std::mt19937& rng, size_t n, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& f : v) f = dist(rng);
  return v;
}

// A matrix [rows, cols] stored in `dtype` with row_stride >= cols elements,
// starting `byte_offset` bytes into its buffer (to test misaligned data).
struct TestMatrix {
  std::vector<uint8_t> storage;
  MatrixView view;

  TestMatrix(std::mt19937& rng, DType dtype, int64_t rows, int64_t cols, int64_t row_stride, size_t byte_offset = 0) {
    const size_t esize = DTypeSize(dtype);
    // 0xFF bytes are NaN in every float format: reading padding poisons results.
    storage.assign(byte_offset + size_t(rows * row_stride) * esize + 64, 0xFF);
    uint8_t* base = storage.data() + byte_offset;
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        const float f = dist(rng);
        uint8_t* p = base + size_t(r * row_stride + c) * esize;
        if (dtype == DType::kF32) {
          std::memcpy(p, &f, 4);
        } else if (dtype == DType::kBF16) {
          const uint16_t b = F32ToBf16(f);
          std::memcpy(p, &b, 2);
        } else if (dtype == DType::kF16) {
          const uint16_t h = F32ToF16(f);
          std::memcpy(p, &h, 2);
        } else {
          const uint8_t e = F32ToE4M3(f);
          std::memcpy(p, &e, 1);
        }
      }
    view = MatrixView{.dtype = dtype, .data = base, .rows = rows, .cols = cols, .row_stride = row_stride};
  }
};

// A quantized matrix [rows, cols] (WeightFormat kNvfp4 or kFp8, with or
// without 128x128 block scales) of random codes and scales, padded with 0xFF
// (a NaN scale, a NaN FP8 code) past every row and scale row. For NVFP4,
// cols % 16 == 0. Codes cover every value, signs and zeros included, except
// FP8's NaN codes.
struct QuantTestMatrix {
  std::vector<uint8_t> codes;
  std::vector<uint8_t> scale_bytes;
  MatrixView view;

  QuantTestMatrix(std::mt19937& rng, WeightFormat format, bool block_scales, int64_t rows, int64_t cols,
                  int64_t stride_pad = 0, size_t byte_offset = 0) {
    std::uniform_int_distribution<int> byte(0, 255);
    std::uniform_real_distribution<float> unit(0.5f, 2.0f);
    view.format = format;
    view.rows = rows;
    view.cols = cols;
    view.global_scale = unit(rng) * 0.01f;
    if (format == WeightFormat::kNvfp4) {
      view.dtype = DType::kU8;
      view.row_stride = cols + 16 * stride_pad;
      const int64_t row_bytes = view.row_stride / 2;
      codes.assign(byte_offset + size_t(rows * row_bytes) + 64, 0xFF);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t b = 0; b < cols / 2; ++b) codes[byte_offset + size_t(r * row_bytes + b)] = uint8_t(byte(rng));
      view.scale_stride = cols / kNvfp4Block + stride_pad;
      scale_bytes.assign(size_t(rows * view.scale_stride) + 64, 0xFF);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t b = 0; b < cols / kNvfp4Block; ++b)
          scale_bytes[size_t(r * view.scale_stride + b)] = F32ToE4M3(unit(rng) * (b % 3 == 0 ? 64.0f : 1.0f));
    } else {
      view.dtype = DType::kF8E4M3;
      view.row_stride = cols + stride_pad;
      codes.assign(byte_offset + size_t(rows * view.row_stride) + 64, 0xFF);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t k = 0; k < cols; ++k) {
          int v = byte(rng);
          while ((v & 0x7f) == 0x7f) v = byte(rng);
          codes[byte_offset + size_t(r * view.row_stride + k)] = uint8_t(v);
        }
      if (block_scales) {
        const int64_t br = (rows + kFp8Block - 1) / kFp8Block, bc = (cols + kFp8Block - 1) / kFp8Block;
        view.scale_stride = bc + stride_pad;
        scale_bytes.assign(size_t(br * view.scale_stride) * 4 + 64, 0xFF);
        for (int64_t r = 0; r < br; ++r)
          for (int64_t b = 0; b < bc; ++b) {
            const float s = unit(rng);
            std::memcpy(&scale_bytes[size_t(r * view.scale_stride + b) * 4], &s, 4);
          }
      }
    }
    view.data = codes.data() + byte_offset;
    view.scales = scale_bytes.empty() ? nullptr : scale_bytes.data();
  }
};

}  // namespace tern::kernels::testing
