#include "model/shard.h"

#include <fmt/format.h>

#include "model/linear_slice.h"

namespace tern {
namespace {

// Every slice is copied into memory the layer owns (linear_slice.h says why);
// lm_head stays a view: its rows are the embedding's, which every rank reads.
constexpr bool kCopy = true;

// Part `index` of `parts` equal parts of [0, n).
IndexRange Part(int64_t n, int64_t parts, int64_t index) { return {n / parts * index, n / parts * (index + 1)}; }

Status Divides(const std::string& what, int64_t n, int64_t parts, const char* flag) {
  if (n % parts == 0) return Status::Ok();
  return Status::Errorf("{} {} does not split into {} equal parts: choose {} dividing it", what, n, parts, flag);
}

// Column-parallel then row-parallel: rows `rows` of each of `in`, columns `cols` of `out`.
Status ShardDense(DenseFfn& f, int64_t tp, int64_t tp_rank) {
  const int64_t F = f.gate_proj.out();
  TERN_RETURN_IF_ERROR(Divides(f.gate_proj.name + ": intermediate size", F, tp, "--tp"));
  const IndexRange r = Part(F, tp, tp_rank);
  TERN_ASSIGN_OR_RETURN(f.gate_proj, SliceRows(f.gate_proj, r.begin, r.end, kCopy));
  TERN_ASSIGN_OR_RETURN(f.up_proj, SliceRows(f.up_proj, r.begin, r.end, kCopy));
  TERN_ASSIGN_OR_RETURN(f.down_proj, SliceCols(f.down_proj, r.begin, r.end, tp_rank == 0));
  return Status::Ok();
}

Status ShardAttention(AttentionBlock& a, int64_t tp, int64_t tp_rank) {
  const int64_t D = a.head_dim, Hq = a.q_heads, Hkv = a.kv_heads;
  TERN_RETURN_IF_ERROR(Divides(a.q_proj.name + ": attention heads", Hq, tp, "--tp"));
  int64_t kv0 = 0, kvn = 0;
  if (Hkv % tp == 0) {
    kvn = Hkv / tp, kv0 = tp_rank * kvn;
  } else if (tp % Hkv == 0) {  // more ranks than KV heads: each KV head on tp / Hkv ranks
    kvn = 1, kv0 = tp_rank / (tp / Hkv);
  } else {
    return Status::Errorf("{}: {} KV heads cannot be split over --tp {} (one must divide the other)", a.k_proj.name,
                          Hkv, tp);
  }
  const int64_t qn = Hq / tp, q0 = tp_rank * qn, rows_per_head = a.output_gate ? 2 * D : D;
  TERN_ASSIGN_OR_RETURN(a.q_proj, SliceRows(a.q_proj, q0 * rows_per_head, (q0 + qn) * rows_per_head, kCopy));
  TERN_ASSIGN_OR_RETURN(a.k_proj, SliceRows(a.k_proj, kv0 * D, (kv0 + kvn) * D, kCopy));
  TERN_ASSIGN_OR_RETURN(a.v_proj, SliceRows(a.v_proj, kv0 * D, (kv0 + kvn) * D, kCopy));
  TERN_ASSIGN_OR_RETURN(a.o_proj, SliceCols(a.o_proj, q0 * D, (q0 + qn) * D, tp_rank == 0));
  a.q_heads = qn;
  a.kv_heads = kvn;
  return Status::Ok();
}

template <typename T>
std::vector<T> Gather(const std::vector<T>& v, std::span<const IndexRange> ranges) {
  std::vector<T> out;
  for (const IndexRange& r : ranges) out.insert(out.end(), v.begin() + r.begin, v.begin() + r.end);
  return out;
}

Status ShardLinearAttention(GatedDeltaNet& g, int64_t tp, int64_t tp_rank) {
  const int64_t Hk = g.key_heads, Hv = g.value_heads, dk = g.key_dim, dv = g.value_dim, group = Hv / Hk;
  TERN_RETURN_IF_ERROR(Divides(g.out_proj.name + ": linear-attention key heads", Hk, tp, "--tp"));
  const int64_t kn = Hk / tp, k0 = tp_rank * kn, vn = Hv / tp, v0 = tp_rank * vn;
  // Conv channels and in_proj_qkv rows: q | k | v, each by head.
  const IndexRange channels[] = {{k0 * dk, (k0 + kn) * dk}, {Hk * dk + k0 * dk, Hk * dk + (k0 + kn) * dk},
                                 {2 * Hk * dk + v0 * dv, 2 * Hk * dk + (v0 + vn) * dv}};
  if (g.fused_inputs) {  // groups per key head: contiguous
    const int64_t gq = 2 * dk + 2 * group * dv;
    TERN_ASSIGN_OR_RETURN(g.in_proj_qkvz, SliceRows(g.in_proj_qkvz, k0 * gq, (k0 + kn) * gq, kCopy));
    TERN_ASSIGN_OR_RETURN(g.in_proj_ba, SliceRows(g.in_proj_ba, k0 * 2 * group, (k0 + kn) * 2 * group, kCopy));
  } else {
    TERN_ASSIGN_OR_RETURN(g.in_proj_qkv, SliceLinear(g.in_proj_qkv, channels, IndexRange{0, g.in_proj_qkv.in()}));
    TERN_ASSIGN_OR_RETURN(g.in_proj_z, SliceRows(g.in_proj_z, v0 * dv, (v0 + vn) * dv, kCopy));
    TERN_ASSIGN_OR_RETURN(g.in_proj_b, SliceRows(g.in_proj_b, v0, v0 + vn, kCopy));
    TERN_ASSIGN_OR_RETURN(g.in_proj_a, SliceRows(g.in_proj_a, v0, v0 + vn, kCopy));
  }
  TERN_ASSIGN_OR_RETURN(g.out_proj, SliceCols(g.out_proj, v0 * dv, (v0 + vn) * dv, tp_rank == 0));
  std::vector<float> conv;  // [K, C] -> [K, this rank's channels]
  const int64_t C = g.conv_dim();
  for (int64_t j = 0; j < g.kernel; ++j)
    for (const IndexRange& r : channels)
      conv.insert(conv.end(), g.conv_weight.begin() + j * C + r.begin, g.conv_weight.begin() + j * C + r.end);
  g.conv_weight = std::move(conv);
  const IndexRange heads[] = {{v0, v0 + vn}};
  g.dt_bias = Gather(g.dt_bias, heads);
  g.neg_exp_a = Gather(g.neg_exp_a, heads);
  g.key_heads = kn;
  g.value_heads = vn;
  return Status::Ok();
}

Status ShardMoe(MoeFfn& m, const ShardSpec& s) {
  const int64_t E = int64_t(m.experts.size());
  if (s.ep > 1) {
    TERN_RETURN_IF_ERROR(Divides(m.router.name + ": experts", E, s.ep, "--ep"));
    const IndexRange mine = Part(E, s.ep, s.rank);
    for (int64_t e = 0; e < E; ++e) {
      DenseFfn& f = m.experts[size_t(e)];
      if (e < mine.begin || e >= mine.end) {
        f = DenseFfn{};
        continue;
      }
      for (Linear* l : {&f.gate_proj, &f.up_proj, &f.down_proj}) {  // whole, but copied (kCopy)
        TERN_ASSIGN_OR_RETURN(*l, SliceRows(*l, 0, l->out(), kCopy));
      }
    }
    m.expert_begin = mine.begin;
    m.expert_end = mine.end;
  } else {
    for (DenseFfn& f : m.experts) TERN_RETURN_IF_ERROR(ShardDense(f, s.tp, s.tp_rank()));
  }
  if (m.shared_expert) {
    if (s.tp > 1) TERN_RETURN_IF_ERROR(ShardDense(*m.shared_expert, s.tp, s.tp_rank()));
    m.add_shared = s.group() == 0;
  }
  return Status::Ok();
}

}  // namespace

Status CheckParallelism(int tp, int ep, int world) {
  if (tp < 1 || ep < 1) return Status::Errorf("--tp {} --ep {}: both must be at least 1", tp, ep);
  if (ep == 1 && tp != world)
    return Status::Errorf("--tp {} needs {} processes ({} running): start it with mpirun -np {}", tp, tp, world, tp);
  if (ep > 1 && (ep != world || world % tp != 0))
    return Status::Errorf("--ep {} --tp {} needs mpirun -np {} ({} running), with --tp dividing it", ep, tp, ep, world);
  return Status::Ok();
}

Status ShardModel(DecoderModel& m, const ShardSpec& s) {
  TERN_RETURN_IF_ERROR(CheckParallelism(s.tp, s.ep, s.world));
  if (s.world == 1) return Status::Ok();
  const ModelConfig& cfg = m.config();
  const int64_t tp = s.tp, tp_rank = s.tp_rank();
  int64_t state_offset = 0, kv_heads = 0;
  for (size_t i = 0; i < m.layers.size(); ++i) {
    DecoderLayer& l = m.layers[i];
    Status st = Status::Ok();
    if (tp == 1) {  // (expert parallel alone: the mixer is replicated, read in place)
    } else if (l.linear_attn) {
      st = ShardLinearAttention(*l.linear_attn, tp, tp_rank);
      l.linear_attn->state_offset = state_offset;
      state_offset += l.linear_attn->state_bytes();
    } else {
      st = ShardAttention(l.attention, tp, tp_rank);
      kv_heads = l.attention.kv_heads;
    }
    if (!st.ok()) return st;
    l.mixer_reduce = tp > 1 ? s.tp_group : nullptr;
    if (auto* moe = std::get_if<MoeFfn>(&l.ffn)) {
      TERN_RETURN_IF_ERROR(ShardMoe(*moe, s));
      l.ffn_reduce = s.ep > 1 ? s.world_comm : tp > 1 ? s.tp_group : nullptr;
    } else if (tp > 1) {
      TERN_RETURN_IF_ERROR(ShardDense(std::get<DenseFfn>(l.ffn), tp, tp_rank));
      l.ffn_reduce = tp > 1 ? s.tp_group : nullptr;
    }
  }
  DecoderModel::Sharding& sh = m.sharding;
  sh.kv_heads = kv_heads;
  sh.computes_logits = s.group() == 0;
  if (tp > 1) {
    const int64_t V = cfg.vocab_size, slice = (V + tp - 1) / tp, v0 = tp_rank * slice;
    if (v0 >= V) return Status::Errorf("a vocabulary of {} tokens is too small for --tp {}", V, tp);
    TERN_ASSIGN_OR_RETURN(m.lm_head, SliceRows(m.lm_head, v0, std::min(V, v0 + slice)));
    sh.logits_group = s.tp_group;
    sh.vocab_slice = slice;
  }
  m.mtp.reset();
  // What this rank holds: its layers' weights, the embedding and lm_head, the norms.
  int64_t bytes = 0;
  m.ForEachLinear([&](Linear& l) { bytes += l.w.data ? l.bytes() : 0; });
  const uint8_t* e = m.embed_tokens->data;
  const auto* head = static_cast<const uint8_t*>(m.lm_head.w.data);
  if (head >= e && head < e + m.embed_tokens->nbytes) bytes -= m.lm_head.bytes();  // tied: inside the embedding
  sh.weight_bytes = bytes + int64_t(m.embed_tokens->nbytes);
  return Status::Ok();
}

}  // namespace tern
