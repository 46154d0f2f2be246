#include "app/synth.h"

#include <cmath>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "app/quantize_run.h"
#include "base/mapped_file.h"
#include "model/synth_checkpoint.h"
#include "tokenize/synthetic.h"
#include "tokenize/tokenizer.h"

namespace tern {
namespace fs = std::filesystem;

Status SynthesizeUnquantized(const SynthOptions& o);

Status Synthesize(const SynthOptions& o) {
  if (o.quant.empty()) return SynthesizeUnquantized(o);
  app::QuantizeRun run;
  if (o.quant == "nvfp4") run.options.format = CheckpointQuant::kNvfp4;
  else if (o.quant == "fp8") run.options.format = CheckpointQuant::kFp8;
  else if (o.quant == "fp8-block") run.options.format = CheckpointQuant::kFp8Block;
  else return Status::Errorf("synth: unknown --quant \"{}\" (nvfp4, fp8, fp8-block)", o.quant);
  // The unquantized checkpoint first, beside the output, then quantized from it.
  SynthOptions plain = o;
  plain.quant.clear();
  plain.out_dir = o.out_dir + ".unquantized.tmp";
  std::error_code ec;
  fs::remove_all(plain.out_dir, ec);
  TERN_RETURN_IF_ERROR(SynthesizeUnquantized(plain));
  // Synthetic ModelOpt checkpoints carry FP8 KV-cache scales too (as recipes with kv_fp8 do).
  run.options.kv_cache_fp8 = run.options.format != CheckpointQuant::kFp8Block;
  run.in_dir = plain.out_dir;
  run.out_dir = o.out_dir;
  Result<std::string> r = app::RunQuantize(run);
  fs::remove_all(plain.out_dir, ec);
  return r.ok() ? Status::Ok() : r.status();
}

Status SynthesizeUnquantized(const SynthOptions& o) {
  const SynthPreset* preset = nullptr;
  std::vector<SynthPreset> presets = SynthPresets();
  std::string names;
  for (const auto& p : presets) {
    if (p.arch != o.arch) continue;
    names += (names.empty() ? "" : ", ") + p.name;
    if (p.name == o.preset) preset = &p;
  }
  if (names.empty()) return Status::Errorf("synth: unknown architecture \"{}\" (qwen3, qwen3_moe, qwen3_5_moe, qwen3_next)", o.arch);
  if (!preset) return Status::Errorf("synth: no preset \"{}\" for {} (known: {})", o.preset, o.arch, names);
  if (o.dtype != DType::kF32 && o.dtype != DType::kBF16 && o.dtype != DType::kF16)
    return Status::Error("synth: --dtype must be f32, bf16 or f16");
  std::error_code ec;
  fs::create_directories(o.out_dir, ec);
  if (ec) return Status::Errorf("synth: cannot create {}: {}", o.out_dir, ec.message());
  const fs::path out(o.out_dir);

  // Tokenizer first: the vocabulary size of small presets follows it.
  std::string tok_json, tok_cfg;
  if (!o.tokenizer_dir.empty()) {
    TERN_ASSIGN_OR_RETURN(tok_json, ReadFileToString((fs::path(o.tokenizer_dir) / "tokenizer.json").string()));
    TERN_ASSIGN_OR_RETURN(tok_cfg, ReadFileToString((fs::path(o.tokenizer_dir) / "tokenizer_config.json").string()));
  } else {
    tok_json = MakeSyntheticTokenizerJson(preset->vocab > 0 ? 2048 : 512);
    // Each family's own template: Qwen3.5 checkpoints ship theirs (thinking
    // opened by the generation prompt, Qwen3-Coder XML tool calls).
    tok_cfg = SyntheticTokenizerConfigJson(preset->arch == "qwen3_5_moe" ? SyntheticChatTemplate::kQwen35
                                                                          : SyntheticChatTemplate::kQwen3);
  }
  TERN_ASSIGN_OR_RETURN(Tokenizer tok, Tokenizer::FromJson(tok_json));
  int64_t vocab = preset->vocab;
  if (vocab == 0) vocab = (int64_t(tok.vocab_size()) + 63) / 64 * 64;  // padded, like real checkpoints
  if (vocab < tok.vocab_size())
    return Status::Errorf("synth: preset vocab {} is smaller than the tokenizer's {}", vocab, tok.vocab_size());
  const int32_t eos = tok.TokenToId("<|im_end|>").value_or(tok.TokenToId("<|endoftext|>").value_or(0));
  const int32_t bos = tok.TokenToId("<|endoftext|>").value_or(0);
  TERN_RETURN_IF_ERROR(WriteStringToFile((out / "tokenizer.json").string(), tok_json));
  TERN_RETURN_IF_ERROR(WriteStringToFile((out / "tokenizer_config.json").string(), tok_cfg));

  const SynthPreset& p = *preset;
  nlohmann::ordered_json gen;
  gen["bos_token_id"] = bos;
  gen["eos_token_id"] = {eos, tok.TokenToId("<|endoftext|>").value_or(eos)};
  gen["do_sample"] = true;
  gen["temperature"] = 0.6;
  gen["top_p"] = 0.95;
  gen["top_k"] = 20;
  TERN_RETURN_IF_ERROR(WriteStringToFile((out / "generation_config.json").string(), gen.dump(2) + "\n"));

  // Tensors in HF order, written into shards of at most max_shard_bytes.
  return WriteSyntheticWeights(o.out_dir, SynthWeightsOptions{.preset = p, .vocab = vocab, .dtype = o.dtype,
                                                              .seed = o.seed, .bos_token_id = bos,
                                                              .eos_token_id = eos,
                                                              .max_shard_bytes = o.max_shard_bytes});
}

}  // namespace tern
