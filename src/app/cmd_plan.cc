// `tern plan`: per-rank weights, KV cache and recurrent state, and how many
// requests of --context tokens fit, for each --tp and --memory-per-rank given
// (app/plan.h). Reads config.json and the quantization config only.
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "app/commands.h"
#include "app/plan.h"
#include "base/mapped_file.h"

namespace tern::app {
namespace {

std::string Gb(int64_t bytes) { return fmt::format("{:.2f} GB", double(bytes) / 1e9); }

struct PlanCli {
  std::string model;
  std::vector<int> tp = {1};
  int ep = 1, world = 0;
  std::string kv_cache_dtype = "auto";
  std::vector<std::string> memory = {"64GB"};
  std::string reserve;
  int64_t context = 32768, page_size = 16;
  bool json = false;
};

int Run(const PlanCli& o) {
  auto cfg = LoadModelConfig(o.model);
  if (!cfg.ok()) return Fail("plan: " + cfg.status().message());
  auto text = ReadFileToString((std::filesystem::path(o.model) / "config.json").string());
  if (!text.ok()) return Fail("plan: " + text.status().message());
  // The VLM wrapper (text_config) names its layers model.language_model.*.
  const nlohmann::json top = nlohmann::json::parse(*text, nullptr, false);
  const bool vlm = top.is_object() && top.contains("text_config");
  std::vector<int64_t> memories;
  for (const std::string& m : o.memory) {
    auto b = ParseByteSize(m);
    if (!b.ok()) return Fail("plan: --memory-per-rank " + b.status().message());
    memories.push_back(*b);
  }
  std::optional<int64_t> reserve;
  if (!o.reserve.empty()) {
    auto r = ParseByteSize(o.reserve);
    if (!r.ok()) return Fail("plan: --reserve " + r.status().message());
    reserve = *r;
  }
  if (o.context <= 0 || o.page_size <= 0) return Fail("plan: --context and --page-size must be positive");

  nlohmann::json out = nlohmann::json::array();
  std::vector<std::pair<MemoryPlan, std::vector<RequestFit>>> rows;
  for (int tp : o.tp) {
    const int world = o.world > 0 ? o.world : std::max(tp, o.ep);
    auto plan = PlanMemory(*cfg, vlm, PlanOptions{.tp = tp, .ep = o.ep, .world = world, .kv_cache_dtype = o.kv_cache_dtype});
    if (!plan.ok()) return Fail(fmt::format("plan: --tp {} --ep {}: {}", tp, o.ep, plan.status().message()));
    std::vector<RequestFit> fits;
    for (int64_t m : memories)
      fits.push_back(FitRequests(*plan, m, reserve.value_or(DefaultReserve(m)), o.context, o.page_size));
    rows.emplace_back(*plan, fits);
  }
  if (o.json) {
    for (const auto& [p, fits] : rows) {
      nlohmann::json parts = nlohmann::json::object();
      for (const PlanLine& l : p.weights) parts[l.what] = l.bytes;
      nlohmann::json j = {{"tp", p.tp}, {"ep", p.ep}, {"world", p.world}, {"weight_bytes", p.weight_bytes},
                          {"weights", parts}, {"embedding_bytes", p.embedding_bytes}, {"mtp_bytes", p.mtp_bytes},
                          {"mtp_loaded", p.mtp_loaded}, {"kv_dtype", DTypeName(p.kv_dtype)},
                          {"kv_heads_per_rank", p.kv_heads_per_rank}, {"kv_bytes_per_token", p.kv_bytes_per_token},
                          {"state_bytes_per_sequence", p.state_bytes_per_sequence}, {"context", o.context},
                          {"fits", nlohmann::json::array()}};
      for (const RequestFit& f : fits)
        j["fits"].push_back({{"memory", f.memory}, {"reserve", f.reserve}, {"free", f.free},
                             {"bytes_per_request", f.bytes_per_request}, {"requests", f.requests}});
      out.push_back(j);
    }
    fmt::print("{}\n", out.dump(2));
    return 0;
  }

  fmt::print("{}: {} ({}), quantization {}\n", o.model, cfg->model_type, cfg->torch_dtype.empty() ? "bfloat16" : cfg->torch_dtype,
             cfg->quant.empty() ? "none" : cfg->quant.quant_algo + " (" + cfg->quant.source + ")");
  for (const auto& [p, fits] : rows) {
    fmt::print("\n--tp {} --ep {} ({} ranks), per rank:\n", p.tp, p.ep, p.world);
    for (const PlanLine& l : p.weights) fmt::print("  {:<34} {:>18} B  {:>10}\n", l.what, l.bytes, Gb(l.bytes));
    fmt::print("  {:<34} {:>18} B  {:>10}\n", "weights", p.weight_bytes, Gb(p.weight_bytes));
    if (p.mtp_bytes > 0 && !p.mtp_loaded)
      fmt::print("  (MTP head {} B = {}: not loaded on more than one rank)\n", p.mtp_bytes, Gb(p.mtp_bytes));
    fmt::print("  (the token embedding, {}, is mapped in full; only looked-up rows become resident)\n",
               Gb(p.embedding_bytes));
    fmt::print("  KV cache {} ({} KV head{} a rank): {} B a token, {} a {}-token sequence\n", DTypeName(p.kv_dtype),
               p.kv_heads_per_rank, p.kv_heads_per_rank == 1 ? "" : "s", p.kv_bytes_per_token,
               Gb(p.kv_bytes_per_token * o.context), o.context);
    if (p.state_bytes_per_sequence > 0)
      fmt::print("  linear-attention state (f32): {} B a sequence ({})\n", p.state_bytes_per_sequence,
                 Gb(p.state_bytes_per_sequence));
    for (const RequestFit& f : fits)
      fmt::print("  {} a rank, {} reserved for activations and scratch: {} free -> {} concurrent {}-token request{}\n",
                 Gb(f.memory), Gb(f.reserve), Gb(f.free), f.requests, o.context, f.requests == 1 ? "" : "s");
  }
  if (rows.size() > 1 || memories.size() > 1) {
    fmt::print("\n| --tp | weights / rank |");
    for (int64_t m : memories) fmt::print(" {} |", Gb(m));
    fmt::print("\n|---|---|");
    for (size_t i = 0; i < memories.size(); ++i) fmt::print("---|");
    fmt::print("\n");
    for (const auto& [p, fits] : rows) {
      fmt::print("| {} | {} |", p.tp, Gb(p.weight_bytes));
      for (const RequestFit& f : fits) fmt::print(" {} |", f.requests);
      fmt::print("\n");
    }
    fmt::print("(concurrent {}-token requests the deployment holds: each rank keeps its part of every request's KV cache)\n",
               o.context);
  }
  return 0;
}

}  // namespace

Command RegisterPlan(CLI::App& app) {
  auto o = std::make_shared<PlanCli>();
  app.add_option("--model", o->model, "model directory (config.json, hf_quant_config.json; no weights needed)")->required();
  app.add_option("--tp", o->tp, "tensor-parallel size (repeat for several; default 1)");
  app.add_option("--ep", o->ep, "expert-parallel size: 1, or the world size")->default_val(1);
  app.add_option("--world", o->world, "ranks (default: the larger of --tp and --ep)");
  app.add_option("--kv-cache-dtype", o->kv_cache_dtype, "auto, bf16, fp16, fp32, fp8_e4m3 (as tern serve)")->default_val("auto");
  app.add_option("--memory-per-rank", o->memory, "memory of each rank, e.g. 64GB, 80GiB (repeat for several; default 64GB)");
  app.add_option("--reserve", o->reserve, "activation and scratch reserve per rank (default: 5% of the memory, at least 2 GB)");
  app.add_option("--context", o->context, "tokens per request")->default_val(32768);
  app.add_option("--page-size", o->page_size, "tokens per KV block (requests take whole blocks)")->default_val(16);
  app.add_flag("--json", o->json, "print the plans as JSON (bytes exact)");
  return [o]() { return Run(*o); };
}

}  // namespace tern::app
