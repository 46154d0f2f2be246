#include "app/plan.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "model/architecture.h"
#include "model/kv_cache.h"

namespace tern::app {
namespace {

enum class Fmt { kNone, kNvfp4, kFp8, kFp8Block };

struct Range {
  int64_t begin = 0, end = 0;
  int64_t size() const { return end - begin; }
};

// Part `index` of `parts` equal parts of [0, n) (model/shard.cc's Part).
Range Part(int64_t n, int64_t parts, int64_t index) { return {n / parts * index, n / parts * (index + 1)}; }

Status Divides(const std::string& what, int64_t n, int64_t parts, const char* flag) {
  if (parts > 0 && n % parts == 0) return Status::Ok();
  return Status::Errorf("{} {} does not split into {} equal parts: choose {} dividing it", what, n, parts, flag);
}

// 128-element blocks [floor(begin/128), ceil(end/128)) a range touches.
int64_t BlocksTouched(Range r) { return (r.end + 127) / 128 - r.begin / 128; }

// One rank's view of a model: sums the bytes of what it keeps, by part.
class Counter {
 public:
  Counter(const ModelConfig& c, int64_t dsize) : c_(c), dsize_(dsize) {}

  // The stored format of Linear `module` as the quantization config declares it.
  Fmt FormatOf(const std::string& module) const {
    const QuantConfig& q = c_.quant;
    if (q.empty() || q.ExcludedBy(module)) return Fmt::kNone;
    // Serving engines build the router and shared_expert_gate without quantization (vLLM and SGLang
    // pass no quant config to them), and the block-FP8 form (Qwen's and DeepSeek's exports, with no
    // exclusion list) leaves lm_head unquantized too: checkpoints store them in BF16.
    auto ends_with = [&](std::string_view tail) {
      return module.size() >= tail.size() && module.compare(module.size() - tail.size(), tail.size(), tail) == 0;
    };
    if (ends_with(".mlp.gate") || ends_with(".shared_expert_gate")) return Fmt::kNone;
    if (!q.weight_block_size.empty() && module == "lm_head") return Fmt::kNone;
    if (q.quant_algo == "MIXED_PRECISION") {
      // quantized_layers names a module or a parent of it ("...mlp.experts"); unlisted: unquantized.
      for (std::string m = module;;) {
        if (auto it = q.layers.find(m); it != q.layers.end())
          return it->second == QuantFormat::kNvfp4 ? Fmt::kNvfp4 : Fmt::kFp8;
        const size_t dot = m.rfind('.');
        if (dot == std::string::npos) return Fmt::kNone;
        m.resize(dot);
      }
    }
    if (q.quant_algo == "NVFP4") return Fmt::kNvfp4;
    return q.weight_block_size.empty() ? Fmt::kFp8 : Fmt::kFp8Block;
  }

  // Linear `module` stored [N, K]: this rank keeps rows `rows` and columns `cols`.
  Status Linear(const char* part, const std::string& module, int64_t N, int64_t K, std::vector<Range> rows, Range cols,
                bool bias = false) {
    int64_t n = 0, row_blocks = 0;
    for (Range r : rows) n += r.size(), row_blocks += BlocksTouched(r);
    const int64_t k = cols.size();
    int64_t bytes = 0;
    switch (FormatOf(module)) {
      case Fmt::kNone:
        bytes = n * k * dsize_;
        break;
      case Fmt::kNvfp4:
        if (K % 16 != 0 || cols.begin % 16 != 0 || k % 16 != 0)
          return Status::Errorf("{}: NVFP4 columns [{}, {}) of {} do not fall on 16-element blocks", module, cols.begin,
                                cols.end, K);
        bytes = n * k / 2 + n * (k / 16) + 2 * 4;  // codes, E4M3 block scales, weight_scale_2 + input_scale
        break;
      case Fmt::kFp8:
        bytes = n * k + 2 * 4;  // weights, weight_scale + input_scale
        break;
      case Fmt::kFp8Block:
        bytes = n * k + row_blocks * BlocksTouched(cols) * 4;  // weights, weight_scale_inv per 128x128 block
        break;
    }
    if (bias) bytes += n * dsize_;
    (void)N;
    Add(part, bytes);
    return Status::Ok();
  }
  void Plain(const char* part, int64_t elements) { Add(part, elements * dsize_); }
  void Add(const char* part, int64_t bytes) {
    if (bytes == 0) return;
    if (!by_part_.count(part)) order_.push_back(part);
    by_part_[part] += bytes;
  }
  std::vector<PlanLine> Lines() const {
    std::vector<PlanLine> out;
    for (const std::string& p : order_) out.push_back({p, by_part_.at(p)});
    return out;
  }

 private:
  const ModelConfig& c_;
  int64_t dsize_;
  std::vector<std::string> order_;
  std::map<std::string, int64_t> by_part_;
};

struct Shard {
  int64_t tp = 1, tp_rank = 0, ep = 1, rank = 0;
};

Status CountDense(Counter& k, const char* part, const std::string& p, int64_t H, int64_t F, const Shard& s) {
  TERN_RETURN_IF_ERROR(Divides(p + "gate_proj: intermediate size", F, s.tp, "--tp"));
  const Range r = Part(F, s.tp, s.tp_rank);
  TERN_RETURN_IF_ERROR(k.Linear(part, p + "gate_proj", F, H, {r}, {0, H}));
  TERN_RETURN_IF_ERROR(k.Linear(part, p + "up_proj", F, H, {r}, {0, H}));
  return k.Linear(part, p + "down_proj", H, F, {{0, H}}, r);
}

Status CountAttention(Counter& k, const ModelConfig& c, const Architecture& arch, const std::string& p, const Shard& s,
                      int64_t* kv_heads_per_rank) {
  const int64_t D = c.head_dim, Hq = c.num_attention_heads, Hkv = c.num_key_value_heads, H = c.hidden_size;
  TERN_RETURN_IF_ERROR(Divides(p + "q_proj: attention heads", Hq, s.tp, "--tp"));
  int64_t kv0 = 0, kvn = 0;
  if (Hkv % s.tp == 0) {
    kvn = Hkv / s.tp, kv0 = s.tp_rank * kvn;
  } else if (s.tp % Hkv == 0) {
    kvn = 1, kv0 = s.tp_rank / (s.tp / Hkv);
  } else {
    return Status::Errorf("{}k_proj: {} KV heads cannot be split over --tp {} (one must divide the other)", p, Hkv, s.tp);
  }
  *kv_heads_per_rank = kvn;
  const int64_t qn = Hq / s.tp, q0 = s.tp_rank * qn, per_head = arch.attention_output_gate ? 2 * D : D;
  const bool bias = c.attention_bias;
  const char* part = "attention (full layers)";
  TERN_RETURN_IF_ERROR(k.Linear(part, p + "q_proj", per_head * Hq, H, {{q0 * per_head, (q0 + qn) * per_head}}, {0, H}, bias));
  TERN_RETURN_IF_ERROR(k.Linear(part, p + "k_proj", Hkv * D, H, {{kv0 * D, (kv0 + kvn) * D}}, {0, H}, bias));
  TERN_RETURN_IF_ERROR(k.Linear(part, p + "v_proj", Hkv * D, H, {{kv0 * D, (kv0 + kvn) * D}}, {0, H}, bias));
  TERN_RETURN_IF_ERROR(k.Linear(part, p + "o_proj", H, Hq * D, {{0, H}}, {q0 * D, (q0 + qn) * D}, bias && s.tp_rank == 0));
  k.Plain("norms", 2 * D);  // q_norm, k_norm
  // k_proj.k_scale, v_proj.v_scale: the main model's full-attention layers (the MTP head is left unquantized).
  if (c.quant.kv_cache_quant_algo == "FP8" && p.rfind("mtp.", 0) != 0) k.Add("KV-cache scales", 2 * 4);
  return Status::Ok();
}

// Returns this rank's recurrent-state bytes of the layer.
Result<int64_t> CountLinearAttention(Counter& k, const ModelConfig& c, const std::string& p, const Shard& s) {
  const int64_t Hk = c.linear_num_key_heads, Hv = c.linear_num_value_heads, dk = c.linear_key_head_dim,
                dv = c.linear_value_head_dim, K = c.linear_conv_kernel_dim, H = c.hidden_size;
  TERN_RETURN_IF_ERROR(Divides(p + "out_proj: linear-attention key heads", Hk, s.tp, "--tp"));
  TERN_RETURN_IF_ERROR(Divides(p + "out_proj: linear-attention value heads", Hv, s.tp, "--tp"));
  const int64_t kn = Hk / s.tp, k0 = s.tp_rank * kn, vn = Hv / s.tp, v0 = s.tp_rank * vn, g = Hv / Hk;
  const char* part = "linear attention";
  if (c.model_type == "qwen3_next") {  // fused, grouped per key head
    const int64_t gq = 2 * dk + 2 * g * dv;
    TERN_RETURN_IF_ERROR(k.Linear(part, p + "in_proj_qkvz", Hk * gq, H, {{k0 * gq, (k0 + kn) * gq}}, {0, H}));
    TERN_RETURN_IF_ERROR(k.Linear(part, p + "in_proj_ba", 2 * Hv, H, {{k0 * 2 * g, (k0 + kn) * 2 * g}}, {0, H}));
  } else {
    const std::vector<Range> qkv = {{k0 * dk, (k0 + kn) * dk},
                                    {Hk * dk + k0 * dk, Hk * dk + (k0 + kn) * dk},
                                    {2 * Hk * dk + v0 * dv, 2 * Hk * dk + (v0 + vn) * dv}};
    TERN_RETURN_IF_ERROR(k.Linear(part, p + "in_proj_qkv", 2 * Hk * dk + Hv * dv, H, qkv, {0, H}));
    TERN_RETURN_IF_ERROR(k.Linear(part, p + "in_proj_z", Hv * dv, H, {{v0 * dv, (v0 + vn) * dv}}, {0, H}));
    TERN_RETURN_IF_ERROR(k.Linear(part, p + "in_proj_b", Hv, H, {{v0, v0 + vn}}, {0, H}));
    TERN_RETURN_IF_ERROR(k.Linear(part, p + "in_proj_a", Hv, H, {{v0, v0 + vn}}, {0, H}));
  }
  TERN_RETURN_IF_ERROR(k.Linear(part, p + "out_proj", H, Hv * dv, {{0, H}}, {v0 * dv, (v0 + vn) * dv}));
  const int64_t conv_dim = 2 * kn * dk + vn * dv;
  k.Plain(part, conv_dim * K + 2 * vn);  // conv1d [channels, 1, K]; dt_bias, A_log by head
  k.Plain("norms", dv);                  // the gated RMSNorm
  return (conv_dim * (K - 1) + vn * dk * dv) * int64_t(sizeof(float));
}

Status CountMoe(Counter& k, const ModelConfig& c, const std::string& p, const Shard& s) {
  const int64_t E = c.num_experts, H = c.hidden_size, F = c.moe_intermediate_size;
  TERN_RETURN_IF_ERROR(k.Linear("router and gates", p + "gate", E, H, {{0, E}}, {0, H}));
  Range mine{0, E};
  Shard expert_shard = s;
  if (s.ep > 1) {
    TERN_RETURN_IF_ERROR(Divides(p + "gate: experts", E, s.ep, "--ep"));
    mine = Part(E, s.ep, s.rank);
    expert_shard.tp = 1, expert_shard.tp_rank = 0;  // whole experts
  }
  for (int64_t e = mine.begin; e < mine.end; ++e)
    TERN_RETURN_IF_ERROR(CountDense(k, "routed experts", fmt::format("{}experts.{}.", p, e), H, F, expert_shard));
  if (c.shared_expert_intermediate_size > 0) {
    TERN_RETURN_IF_ERROR(CountDense(k, "shared expert", p + "shared_expert.", H, c.shared_expert_intermediate_size, s));
    TERN_RETURN_IF_ERROR(k.Linear("router and gates", p + "shared_expert_gate", 1, H, {{0, 1}}, {0, H}));
  }
  return Status::Ok();
}

// One decoder layer under prefix p. Adds its recurrent state to *state.
Status CountLayer(Counter& k, const ModelConfig& c, const Architecture& arch, const std::string& p, int64_t layer,
                  bool linear, const Shard& s, int64_t* kv_heads, int64_t* state) {
  const TensorNames& n = arch.names;
  k.Plain("norms", 2 * c.hidden_size);  // input_layernorm, post_attention_layernorm
  if (linear) {
    TERN_ASSIGN_OR_RETURN(int64_t st, CountLinearAttention(k, c, p + std::string(n.linear_attention), s));
    *state += st;
  } else {
    TERN_RETURN_IF_ERROR(CountAttention(k, c, arch, p + std::string(n.attention), s, kv_heads));
  }
  const std::string ffn = p + std::string(n.ffn);
  if (IsSparseLayer(arch, c, layer)) return CountMoe(k, c, ffn, s);
  return CountDense(k, "dense MLP", ffn, c.hidden_size, c.intermediate_size, s);
}

}  // namespace

Result<MemoryPlan> PlanMemory(const ModelConfig& cfg, bool vlm_names, const PlanOptions& o) {
  const Architecture* arch = FindArchitecture(cfg.model_type);
  if (!arch) return Status::Errorf("model_type \"{}\" is not one tern serves ({})", cfg.model_type, ArchitectureNames());
  ModelConfig c = cfg;
  if (arch->linear_attention && c.layer_types.empty() && c.full_attention_interval <= 0) c.full_attention_interval = 4;
  MemoryPlan p{.tp = o.tp, .ep = o.ep, .world = o.world > 0 ? o.world : std::max(o.tp, o.ep)};
  if (p.tp < 1 || p.ep < 1) return Status::Errorf("--tp {} --ep {}: both must be at least 1", p.tp, p.ep);
  if (p.world % p.tp != 0) return Status::Errorf("--tp {} must divide the world of {} ranks", p.tp, p.world);
  if (p.ep > 1 && p.ep != p.world)
    return Status::Errorf("--ep {}: expert parallelism spans the whole world ({} ranks): give --ep 1 or {}", p.ep, p.world,
                          p.world);
  if (p.ep > 1 && c.num_experts <= 0) return Status::Errorf("--ep {}: {} has no experts", p.ep, c.model_type);
  const std::string dtype_name = c.torch_dtype.empty() ? "bfloat16" : c.torch_dtype;
  const DType wdtype = dtype_name == "float32" ? DType::kF32 : dtype_name == "float16" ? DType::kF16 : DType::kBF16;
  const int64_t dsize = int64_t(DTypeSize(wdtype));
  TERN_ASSIGN_OR_RETURN(p.kv_dtype, ParseKvCacheDtype(o.kv_cache_dtype, wdtype));
  const std::string prefix = vlm_names ? std::string(arch->names.vlm_prefix) : std::string(arch->names.text_prefix);
  const int64_t H = c.hidden_size, V = c.vocab_size;
  int64_t full_layers = 0;
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) full_layers += !(arch->linear_attention && c.IsLinearAttentionLayer(i));

  // Every rank; the plan reports the one holding the most (rank 0: the last may hold fewer lm_head rows).
  for (int64_t rank = 0; rank < p.world; ++rank) {
    const Shard s{.tp = p.tp, .tp_rank = rank % p.tp, .ep = p.ep, .rank = rank};
    Counter k(c, dsize);
    int64_t kv_heads = 0, state = 0;
    k.Add("token embedding (mapped in full)", V * H * dsize);
    for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
      const bool linear = arch->linear_attention && c.IsLinearAttentionLayer(i);
      const std::string lp = fmt::format("{}{}{}.", prefix, arch->names.layers, i);
      TERN_RETURN_IF_ERROR(CountLayer(k, c, *arch, lp, i, linear, s, &kv_heads, &state));
    }
    k.Plain("norms", H);  // the final norm
    if (!c.tie_word_embeddings) {  // tied: the head is the embedding's rows
      const int64_t slice = (V + p.tp - 1) / p.tp, v0 = s.tp_rank * slice;
      if (v0 >= V) return Status::Errorf("a vocabulary of {} tokens is too small for --tp {}", V, p.tp);
      TERN_RETURN_IF_ERROR(k.Linear("lm_head (vocabulary-parallel)", std::string(arch->names.lm_head), V, H,
                                    {{v0, std::min(V, v0 + slice)}}, {0, H}));
    }
    // The MTP head: whole, on a single rank only.
    Counter mtp(c, dsize);
    const int64_t mtp_layers = arch->mtp_head ? c.mtp_num_hidden_layers.value_or(0) : 0;
    if (mtp_layers > 0) {
      mtp.Plain("mtp", 3 * H);  // pre_fc_norm_embedding, pre_fc_norm_hidden, norm
      TERN_RETURN_IF_ERROR(mtp.Linear("mtp", "mtp.fc", H, 2 * H, {{0, H}}, {0, 2 * H}));
      int64_t ignored_heads = 0, ignored_state = 0;
      for (int64_t i = 0; i < mtp_layers; ++i)
        TERN_RETURN_IF_ERROR(CountLayer(mtp, c, *arch, fmt::format("mtp.layers.{}.", i), i, false, Shard{},
                                        &ignored_heads, &ignored_state));
    }
    int64_t mtp_bytes = 0;
    for (const PlanLine& l : mtp.Lines()) mtp_bytes += l.bytes;
    std::vector<PlanLine> lines = k.Lines();
    const bool mtp_loaded = p.world == 1 && mtp_bytes > 0;
    if (mtp_loaded) lines.push_back({"MTP head", mtp_bytes});
    int64_t total = 0;
    for (const PlanLine& l : lines) total += l.bytes;
    if (rank == 0 || total > p.weight_bytes) {
      p.weights = lines;
      p.weight_bytes = total;
      p.embedding_bytes = V * H * dsize;
      p.mtp_bytes = mtp_bytes;
      p.mtp_loaded = mtp_loaded;
      p.kv_heads_per_rank = kv_heads;
      p.state_bytes_per_sequence = state;
    }
  }
  p.kv_bytes_per_token = KvCache::BytesPerToken(
      CacheSpec{.attention_layers = full_layers, .kv_heads = p.kv_heads_per_rank, .head_dim = c.head_dim}, p.kv_dtype);
  return p;
}

int64_t DefaultReserve(int64_t memory) { return std::max<int64_t>(2'000'000'000, memory / 20); }

RequestFit FitRequests(const MemoryPlan& p, int64_t memory, int64_t reserve, int64_t context, int64_t page_size) {
  RequestFit f{.memory = memory, .reserve = reserve};
  f.free = memory - p.weight_bytes - reserve;
  const int64_t pages = (context + page_size - 1) / page_size;
  f.bytes_per_request = pages * page_size * p.kv_bytes_per_token + p.state_bytes_per_sequence;
  f.requests = f.free > 0 && f.bytes_per_request > 0 ? f.free / f.bytes_per_request : 0;
  return f;
}

Result<int64_t> ParseByteSize(const std::string& text) {
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  if (i == 0) return Status::Errorf("\"{}\": expected a size such as 64GB or 80GiB", text);
  double v = 0;
  try {
    v = std::stod(text.substr(0, i));
  } catch (const std::exception&) {
    return Status::Errorf("\"{}\": expected a size such as 64GB or 80GiB", text);
  }
  std::string unit;
  for (char ch : text.substr(i))
    if (ch != ' ') unit += char(std::tolower(static_cast<unsigned char>(ch)));
  static const std::map<std::string, double> kUnits = {
      {"", 1},      {"b", 1},       {"kb", 1e3},    {"mb", 1e6},         {"gb", 1e9},         {"tb", 1e12},
      {"k", 1e3},   {"m", 1e6},     {"g", 1e9},     {"t", 1e12},         {"kib", 1024.0},     {"mib", 1048576.0},
      {"gib", 1073741824.0}, {"tib", 1099511627776.0}};
  auto it = kUnits.find(unit);
  if (it == kUnits.end()) return Status::Errorf("\"{}\": unknown unit \"{}\" (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)", text, unit);
  const double bytes = v * it->second;
  if (!(bytes >= 0 && bytes < 9.2e18)) return Status::Errorf("\"{}\": out of range", text);
  return int64_t(std::llround(bytes));
}

}  // namespace tern::app
