// Tensor and expert parallelism: which part of each layer a rank keeps, and
// where the partial results meet (Megatron-style, as SGLang splits Qwen
// models).
//
// World of N ranks, tensor-parallel groups of T consecutive ranks (N / T
// groups), expert parallelism over E ranks (E == 1, or E == N):
//   attention         q heads / T and KV heads / T (T > KV heads: one KV head
//                     per rank, each held by T / KV-heads ranks); o_proj by
//                     its input columns; summed over the group.
//   linear attention  key and value heads / T (q, k, v, z, b, a, conv
//                     channels, dt_bias, A_log by head); out_proj by columns;
//                     summed over the group.
//   dense MLP         intermediate / T (gate/up rows, down columns); group.
//   MoE               E == 1: each expert's intermediate / T, summed over the
//                     group; E == N: experts / N whole per rank, the shared
//                     expert's intermediate / T in group 0 only, summed over
//                     the world. The router is replicated.
//   lm_head           vocabulary rows / T (ceil), logits gathered on rank 0
//                     of group 0; other groups compute none.
//   replicated        embeddings (read in place: only looked-up rows are
//                     touched), norms, routers, shared_expert_gate.
// The MTP head is not loaded on more than one rank (serving drafts nothing).
#pragma once

#include "base/status.h"
#include "dist/comm.h"
#include "model/decoder.h"

namespace tern {

struct ShardSpec {
  int tp = 1, ep = 1;
  int rank = 0, world = 1;  // this rank in the world
  dist::Comm* tp_group = nullptr;  // this rank's tensor-parallel group (tp ranks)
  dist::Comm* world_comm = nullptr;
  int tp_rank() const { return rank % tp; }
  int group() const { return rank / tp; }
};

// Checks that `world` ranks can run --tp tp --ep ep: an error saying what to change.
Status CheckParallelism(int tp, int ep, int world);

// Replaces every layer of `m` (loaded whole, as views of the checkpoint) by
// this rank's part of it and sets where partial sums meet. Errors name the
// layer and the size that does not divide.
Status ShardModel(DecoderModel& m, const ShardSpec& spec);

}  // namespace tern
