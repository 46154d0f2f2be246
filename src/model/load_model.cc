#include <string>
#include <vector>

#include "model/architecture.h"
#include "model/weight_check.h"

namespace tern {

Result<std::unique_ptr<Model>> LoadModel(const std::string& dir, const LoadOptions& opts) {
  TERN_ASSIGN_OR_RETURN(ModelConfig cfg, LoadModelConfig(dir));
  const Architecture* arch = FindArchitecture(cfg.model_type);
  if (arch == nullptr)
    return Status::Errorf("{}/config.json: unknown architecture model_type \"{}\" (supported: {})", dir,
                          cfg.model_type, ArchitectureNames());
  TERN_ASSIGN_OR_RETURN(TensorStore store, TensorStore::OpenDir(dir));
  auto m = std::make_unique<DecoderModel>(std::move(cfg), std::move(store), opts);
  Status s = LoadQwenFamily(*m, *arch);
  if (!s.ok()) return s.WithContext(fmt::format("loading {}", dir));
  // Buffers HF keeps in some checkpoints, the vision tower of wrapped
  // checkpoints, which text generation does not use, and mtp.* when the config
  // gives the MTP head no layers (as transformers ignores it). A loaded head
  // must use every mtp.* tensor.
  std::vector<std::string> ignored = {"model.rotary_emb.", "rotary_emb.", "model.visual."};
  if (!m->mtp) ignored.push_back("mtp.");
  TERN_RETURN_IF_ERROR(m->CheckAllTensorsUsed(ignored));
  if (opts.weight_check != WeightCheck::kSkip) {
    const std::vector<NonFiniteTensor> bad = FindNonFiniteWeights(m->store(), m->pool());
    if (!bad.empty() && opts.weight_check == WeightCheck::kError)
      return Status::Errorf("loading {}: weights hold NaN or Inf: {}", dir, DescribeNonFinite(bad));
    if (!bad.empty())
      fmt::print(stderr, "tern: warning: {}: weights hold NaN or Inf (served anyway; --strict-weights refuses): {}\n",
                 dir, DescribeNonFinite(bad));
  }
  return std::unique_ptr<Model>(std::move(m));
}

}  // namespace tern
