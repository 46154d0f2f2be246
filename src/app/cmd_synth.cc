// `tern synth`.
#include <fmt/format.h>

#include "app/commands.h"
#include "app/synth.h"

namespace tern::app {

Command RegisterSynth(CLI::App& app) {
  auto o = std::make_shared<SynthOptions>();
  auto dtype = std::make_shared<std::string>("bf16");
  app.add_option("--arch", o->arch, "architecture: qwen3, qwen3_moe, qwen3_5_moe or qwen3_next")->required();
  app.add_option("--preset", o->preset, "size preset: tiny, tiny-tied (qwen3), qwen3-0.6b, moe-small, qwen3.5-tiny, qwen3.5-layer (qwen3_5_moe), qwen3-next-tiny")->required();
  app.add_option("--seed", o->seed, "random seed")->default_val(0);
  app.add_option("--out", o->out_dir, "output directory")->required();
  app.add_option("--tokenizer", o->tokenizer_dir, "copy tokenizer.json and tokenizer_config.json from this directory");
  app.add_option("--dtype", *dtype, "weight dtype: bf16, f32 or f16")->default_val("bf16");
  app.add_option("--quant", o->quant, "quantize the weights: nvfp4, fp8 (ModelOpt layout) or fp8-block (128x128)");
  return [o, dtype]() {
    if (*dtype == "bf16") o->dtype = DType::kBF16;
    else if (*dtype == "f32") o->dtype = DType::kF32;
    else if (*dtype == "f16") o->dtype = DType::kF16;
    else return Fail(fmt::format("synth: unknown --dtype \"{}\" (bf16, f32, f16)", *dtype));
    Status s = Synthesize(*o);
    if (!s.ok()) return Fail(s.message());
    fmt::print(stderr, "tern: wrote {} {} checkpoint to {}\n", o->arch, o->preset, o->out_dir);
    return 0;
  };
}

}  // namespace tern::app
