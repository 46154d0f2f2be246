// Writing NumPy .npy files (format version 1.0, little-endian float32).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"

namespace tern {

// data: row-major float32 of the given shape.
Status WriteNpyF32(const std::string& path, std::span<const float> data, const std::vector<int64_t>& shape);

}  // namespace tern
