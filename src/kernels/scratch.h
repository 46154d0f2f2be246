// Per-thread scratch memory for kernels (prepared activations, score rows).
//
// Kernels are called on hot paths hundreds of times per decode step; a heap
// allocation per call (which for megabyte buffers means mmap + page faults)
// would cost more than many of the kernels themselves. Each thread therefore
// keeps one grow-only, 64-byte-aligned buffer per slot.
#pragma once

#include <cstddef>

namespace tern::kernels {

// Slots let one thread hold several live buffers at once (e.g. a kernel's
// prepared input and a nested helper's temporary).
enum class ScratchSlot {
  kMatMulX = 0,
  kGemmPanels,
  kGemmDequant,
  kGemvDequant,
  kAttention,
  kAttentionPartials,
  kW4A4X,  // MatMulW4A4's quantized x around a MatMulMany (which uses kMatMulX)
  kCount
};

// Returns at least `floats` floats of 64-byte-aligned memory owned by the
// calling thread. Contents are unspecified. The pointer stays valid until the
// same thread calls ThreadScratch again with the same slot and a larger size.
float* ThreadScratch(ScratchSlot slot, size_t floats);

}  // namespace tern::kernels
