// The numerics suite's in-process reference (`tern check --reference-model`):
// the checkpoint loaded as `tern generate` loads it, its chat template and
// tokenizer, and each sequence scored teacher-forced through the same Engine
// the server runs (prompt logprobs, EngineRequest::prompt_logprob_start),
// with an F32 KV cache.
#pragma once

#include <memory>

#include "base/status.h"
#include "check/numerics_reference.h"

namespace tern::app {

Result<std::unique_ptr<check::LogprobReference>> LoadEngineReference(const check::ReferenceModelSpec& spec);

}  // namespace tern::app
