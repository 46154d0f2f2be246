// `tern quantize` and `tern synth --quant`: calibrate a model's activation
// ranges on a token prompt, then write its quantized checkpoint
// (model/quantize.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "model/quantize.h"

namespace tern::app {

// Built-in calibration text: mixed prose, dialogue, code, numbers and lists.
const std::string& DefaultCalibrationText();

struct QuantizeRun {
  std::string in_dir, out_dir;
  QuantizeOptions options;
  // Calibration prompt: token ids, or (when empty) `calibration_text`
  // tokenized with the model's tokenizer (the built-in text when that is empty too).
  std::vector<int32_t> calibration_ids;
  std::string calibration_text;
  size_t threads = 0;
};

// Calibrates (unless the format needs no static scales) and quantizes.
// Returns the summary line.
Result<std::string> RunQuantize(QuantizeRun run);

}  // namespace tern::app
