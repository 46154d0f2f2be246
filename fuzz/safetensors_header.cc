// A .safetensors file image: the 8-byte header length, the JSON header and
// the data section, validated by SafetensorsFile::ParseHeader (what
// SafetensorsFile::Open runs on the mapped file).
#include <cstddef>
#include <cstdint>

#include "model/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto tensors = tern::SafetensorsFile::ParseHeader(data, size, "fuzz.safetensors");
  if (tensors.ok()) {
    // Every view must lie inside the image.
    for (const auto& t : *tensors) {
      if (t.data < data || t.data + t.nbytes > data + size) __builtin_trap();
      (void)t.ShapeString();
      (void)t.numel();
    }
  }
  return 0;
}
