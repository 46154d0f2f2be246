// Qwen3-MoE: Qwen3 attention with a sparse MoE feed-forward (no shared expert).
// Extra tensor names (HF Qwen3MoeForCausalLM), for MoE layers:
//   model.layers.{i}.mlp.gate.weight [num_experts, H]            (router)
//   model.layers.{i}.mlp.experts.{e}.{gate,up}_proj.weight [moe_ffn, H], down_proj.weight [H, moe_ffn]
//   or fused: model.layers.{i}.mlp.experts.gate_up_proj [E, 2*moe_ffn, H], experts.down_proj [E, H, moe_ffn]
// Layers listed in mlp_only_layers (or off the decoder_sparse_step grid) keep a dense MLP.
#include <fmt/format.h>

#include "model/architectures.h"

namespace tern {

Status LoadQwen3Moe(DecoderModel& m) {
  const ModelConfig& c = m.config();
  if (c.num_experts <= 0) return Status::Error("qwen3_moe: num_experts must be positive");
  const std::string prefix = QwenTextPrefix(m);
  TERN_RETURN_IF_ERROR(LoadQwenEmbeddingsAndHead(m, prefix));
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = fmt::format("{}layers.{}.", prefix, i);
    TERN_ASSIGN_OR_RETURN(DecoderLayer l, LoadQwen3LayerCommon(m, p, i));
    if (c.IsMoeLayer(i)) {
      TERN_ASSIGN_OR_RETURN(l.ffn, MoeFfn::Load(m.loader(), p + "mlp.", c));
    } else {
      TERN_ASSIGN_OR_RETURN(l.ffn, DenseFfn::Load(m.loader(), p + "mlp.", c.hidden_size, c.intermediate_size));
    }
    m.layers.push_back(std::move(l));
  }
  return Status::Ok();
}

}  // namespace tern
