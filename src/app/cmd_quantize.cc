// `tern quantize`, and the --quant-numerics option shared by the commands
// that run models.
#include <fmt/format.h>

#include "app/commands.h"
#include "app/model_files.h"
#include "app/quantize_run.h"
#include "base/mapped_file.h"
#include "kernels/cpu_features.h"

namespace tern::app {

std::function<Result<ActivationNumerics>()> AddQuantNumericsOption(CLI::App& app) {
  auto choice = std::make_shared<std::string>("w4a16");
  app.add_option("--quant-numerics", *choice,
                 "quantized layers: w4a16 (exact weights, activations at f32 precision; Hopper/Marlin take BF16) or "
                 "w4a4 (activations quantized to NVFP4 as Blackwell's NVFP4 GEMM does, FP8 layers W8A8; NVFP4 decode then "
                 "multiplies 4-bit codes as integers on AVX-512 VNNI or AVX2, the faster decode) or "
                 "w4a8 (a CPU speed mode: NVFP4 layers' inputs as 8-bit integers per 16-element block under a "
                 "power-of-two scale, as llama.cpp's 4-bit types take 8-bit activations; a third of W4A16's "
                 "multiply-adds in NVFP4 decode; FP8 layers unchanged)")
      ->default_val("w4a16");
  return [choice]() -> Result<ActivationNumerics> {
    if (*choice == "w4a16" || *choice == "w8a16") return ActivationNumerics::kFull;
    if (*choice == "w4a4" || *choice == "w8a8") return ActivationNumerics::kGpuQuantized;
    if (*choice == "w4a8") {
      // Every other activation stays f32 (no BF16 GEMMs or attention on the amx and avx512-bf16
      // paths): on models/demo, attention's BF16 rounding flipped enough 8-bit steps downstream to
      // move logprobs by 0.8 nats and KL by 0.14, which no check could tell from a fault; one
      // numerics, "w4a8", is what /get_server_info reports and tern check reproduces.
      TERN_RETURN_IF_ERROR(kernels::SetActivations("f32"));
      return ActivationNumerics::kInt8;
    }
    return Status::Errorf("unknown --quant-numerics \"{}\" (w4a16, w4a4, w4a8)", *choice);
  };
}

Command RegisterQuantize(CLI::App& app) {
  auto run = std::make_shared<QuantizeRun>();
  auto format = std::make_shared<std::string>();
  auto ids = std::make_shared<std::string>();
  auto calib_file = std::make_shared<std::string>();
  app.add_option("--model", run->in_dir, "BF16/F16/F32 checkpoint directory")->required();
  app.add_option("--out", run->out_dir, "output directory")->required();
  app.add_option("--format", *format, "nvfp4, fp8 (ModelOpt, per-tensor scales) or fp8-block (128x128 blocks)")
      ->required();
  app.add_option("--exclude", run->options.exclude,
                 "keep modules matching this fnmatch pattern unquantized (repeatable), besides ModelOpt's defaults");
  app.add_flag("--quantize-lm-head", run->options.quantize_lm_head,
               "quantize the output layer too (ModelOpt keeps it BF16; a tied head gets its own tensor): less to read "
               "per decoded token, more logit error");
  app.add_option("--calibration", *calib_file, "text file to calibrate activation scales on (default: built-in text)");
  app.add_option("--calibration-ids", *ids, "calibrate on these token ids instead (comma-separated)");
  app.add_option("--threads", run->threads, "threads (0: all cores)")->default_val(0);
  app.add_flag("--kv-cache-fp8", run->options.kv_cache_fp8,
               "also calibrate and write FP8 KV-cache scales (k_proj.k_scale, v_proj.v_scale; kv_cache_quant_algo FP8)");
  return [run, format, ids, calib_file]() {
    if (*format == "nvfp4") run->options.format = CheckpointQuant::kNvfp4;
    else if (*format == "fp8") run->options.format = CheckpointQuant::kFp8;
    else if (*format == "fp8-block") run->options.format = CheckpointQuant::kFp8Block;
    else return Fail(fmt::format("quantize: unknown --format \"{}\" (nvfp4, fp8, fp8-block)", *format));
    if (!ids->empty()) {
      auto parsed = ParseIds(*ids);
      if (!parsed.ok()) return Fail("quantize: --calibration-ids: " + parsed.status().message());
      run->calibration_ids = *parsed;
    }
    if (!calib_file->empty()) {
      auto text = ReadFileToString(*calib_file);
      if (!text.ok()) return Fail(text.status().message());
      run->calibration_text = *text;
    }
    fmt::print(stderr, "tern: quantizing {} to {} ...\n", run->in_dir, *format);
    auto summary = RunQuantize(*run);
    if (!summary.ok()) return Fail(summary.status().message());
    fmt::print(stderr, "tern: {}; wrote {}\n", *summary, run->out_dir);
    return 0;
  };
}

}  // namespace tern::app
