// What went wrong with a request, in the engine's own terms. The engine never
// speaks HTTP: src/server maps each kind to a status code and SGLang's wording.
#pragma once

#include <cstdint>

namespace tern {

enum class EngineError : uint8_t {
  kNone,          // no error (with an aborted request: the client or the caller aborted it)
  kInvalidInput,  // cannot run as given: empty input, ids outside the vocabulary, bad sampling parameters
  kTooLong,       // the input does not fit the context length or the KV cache
  kQueueFull,     // the waiting queue holds max_queued_requests already
  kDraining,      // shutting down: no new requests, and those left at the end are aborted
  kInternal,      // the engine or the model failed: a refused batch, an exception, non-finite logits
};

}  // namespace tern
