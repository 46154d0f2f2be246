// Lock step across ranks: rank 0 runs the engine and, before each forward,
// broadcasts the batch plan (the chunks' tokens, positions, block tables,
// state slots, and the KV cache's shape) to the other ranks, which run the
// same forward on their part of the model and their own cache; partial sums
// meet inside the layers (model/shard.h), and the logits reach rank 0.
#pragma once

#include <memory>

#include "base/status.h"
#include "dist/comm.h"
#include "model/model.h"

namespace tern {

// Rank 0's view of a model split over `world`: a Model whose Forward drives
// every rank. The other ranks must be in RunWorker. Destroying it (or
// dist::Finalize) tells them to stop.
std::unique_ptr<Model> MakeLockstepModel(std::unique_ptr<Model> shard, dist::Comm& world);

// A rank other than 0: runs forwards as rank 0's plans say until it says
// stop. A forward that fails here (it cannot: rank 0 checked the batch) ends
// the job.
Status RunWorker(Model& shard, dist::Comm& world);

}  // namespace tern
