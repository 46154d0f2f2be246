#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "dist/runtime.h"
#include "model/architecture.h"
#include "model/lockstep.h"
#include "model/shard.h"
#include "model/weight_check.h"

namespace tern {

namespace {

// Loads the whole model as views of the checkpoint, then (under mpirun) keeps
// this rank's part of it; the weight check covers this rank's share of the
// tensors.
Result<std::unique_ptr<DecoderModel>> LoadPart(const std::string& dir, const LoadOptions& opts) {
  TERN_ASSIGN_OR_RETURN(ModelConfig cfg, LoadModelConfig(dir));
  const Architecture* arch = FindArchitecture(cfg.model_type);
  if (arch == nullptr)
    return Status::Errorf("{}/config.json: unknown architecture model_type \"{}\" (supported: {})", dir,
                          cfg.model_type, ArchitectureNames());
  TERN_ASSIGN_OR_RETURN(TensorStore store, TensorStore::OpenDir(dir));
  LoadOptions o = opts;
  if (o.threads == 0 && dist::LocalSize() > 1)  // ranks sharing a host share its cores
    o.threads = std::max<size_t>(1, std::thread::hardware_concurrency() / size_t(dist::LocalSize()));
  auto m = std::make_unique<DecoderModel>(std::move(cfg), std::move(store), o);
  Status s = LoadQwenFamily(*m, *arch);
  if (!s.ok()) return s.WithContext(fmt::format("loading {}", dir));
  // Buffers HF keeps in some checkpoints, the vision tower of wrapped
  // checkpoints, which text generation does not use, and mtp.* when the config
  // gives the MTP head no layers (as transformers ignores it). A loaded head
  // must use every mtp.* tensor.
  std::vector<std::string> ignored = {"model.rotary_emb.", "rotary_emb.", "model.visual."};
  if (!m->mtp) ignored.push_back("mtp.");
  TERN_RETURN_IF_ERROR(m->CheckAllTensorsUsed(ignored));
  const int world = dist::WorldSize(), rank = dist::WorldRank();
  if (opts.weight_check != WeightCheck::kSkip) {
    const std::vector<NonFiniteTensor> bad = FindNonFiniteWeights(m->store(), m->pool(), rank, world);
    if (!bad.empty() && opts.weight_check == WeightCheck::kError)
      return Status::Errorf("loading {}: weights hold NaN or Inf: {}", dir, DescribeNonFinite(bad));
    if (!bad.empty())
      fmt::print(stderr, "tern: warning: {}: weights hold NaN or Inf (served anyway; --strict-weights refuses): {}\n",
                 dir, DescribeNonFinite(bad));
  }
  if (world > 1 || opts.tp > 1 || opts.ep > 1) {
    // (LoadModel created the group communicator before any rank could fail.)
    const ShardSpec spec{.tp = opts.tp, .ep = opts.ep, .rank = rank, .world = world,
                         .tp_group = &dist::Group(opts.tp), .world_comm = &dist::World()};
    TERN_RETURN_IF_ERROR(ShardModel(*m, spec).WithContext(fmt::format("splitting {} over {} ranks", dir, world)));
    // The checks and the slicing read whole tensors; keep resident only what
    // this rank's part touches from now on.
    m->store().DropResidentPages();
  }
  return m;
}

}  // namespace

Result<std::unique_ptr<Model>> LoadModel(const std::string& dir, const LoadOptions& opts) {
  if (!dist::Launched()) {
    if (opts.tp > 1 || opts.ep > 1)
      return Status::Errorf("--tp {} --ep {} runs one process per rank: start it with mpirun -np {}{}", opts.tp,
                            opts.ep, std::max(opts.tp, opts.ep),
                            dist::BuiltWithMpi() ? "" : " (and build tern with MPI: install libopenmpi-dev)");
    TERN_ASSIGN_OR_RETURN(std::unique_ptr<DecoderModel> m, LoadPart(dir, opts));
    return std::unique_ptr<Model>(std::move(m));
  }
  // Every rank checks the layout, creates the communicators, loads its part,
  // and all agree at each step: one rank's error fails them all, and no rank
  // is left in a collective the others never reach.
  TERN_RETURN_IF_ERROR(dist::AgreeOnStatus(CheckParallelism(opts.tp, opts.ep, dist::WorldSize())));
  (void)dist::Group(opts.tp);
  Result<std::unique_ptr<DecoderModel>> part = LoadPart(dir, opts);
  TERN_RETURN_IF_ERROR(dist::AgreeOnStatus(part.ok() ? Status::Ok() : part.status()));
  std::unique_ptr<Model> m = std::move(*part);
  if (dist::WorldRank() != 0 || dist::WorldSize() == 1) return m;
  return MakeLockstepModel(std::move(m), dist::World());
}

}  // namespace tern
