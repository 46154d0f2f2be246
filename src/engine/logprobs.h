// Log-softmax views of one logits row, as the API layers return them.
#pragma once

#include <cstdint>
#include <span>

#include "engine/request_stream.h"

namespace tern {

// The row's log-softmax at `id` and, for top_k > 0, the top_k most likely
// tokens (ties to the lower id), best first. top_k < 0: only `id`, logprob 0.
// logits: [vocab] f32, all finite.
TokenOutput MakeTokenOutput(int32_t id, std::span<const float> logits, int32_t top_k);

// 1 + the number of tokens whose logit is larger than logits[id] (vLLM's rank).
int32_t RankOf(std::span<const float> logits, int32_t id);

// Whether a logits row holds only finite values. A NaN would also break the
// sampler's sort (no strict weak order), so this runs before it.
bool AllFinite(std::span<const float> row);

}  // namespace tern
