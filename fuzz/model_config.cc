// config.json (ParseModelConfig, which validates it) and the quantization
// config: config.json's quantization_config plus hf_quant_config.json. The
// input is config.json, optionally followed by a NUL byte and the text of
// hf_quant_config.json.
#include <cstddef>
#include <cstdint>
#include <string>

#include "model/config.h"
#include "model/quant_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string in(reinterpret_cast<const char*>(data), size);
  const size_t nul = in.find('\0');
  const std::string config = in.substr(0, nul);
  const std::string hf_quant = nul == std::string::npos ? std::string() : in.substr(nul + 1);
  auto c = tern::ParseModelConfig(config, "fuzz/config.json");
  if (c.ok()) {
    for (int64_t i = 0; i < c->num_hidden_layers && i < 256; ++i) {
      (void)c->IsMoeLayer(i);
      (void)c->IsLinearAttentionLayer(i);
    }
    (void)c->RotaryDim();
  }
  auto q = tern::ParseQuantConfig(config, hf_quant, "fuzz");
  if (q.ok()) {
    for (const char* m : {"model.layers.0.mlp.gate", "model.layers.1.self_attn.q_proj", "lm_head"}) {
      (void)q->ExcludedBy(m);
      for (auto f : {tern::QuantFormat::kNone, tern::QuantFormat::kNvfp4, tern::QuantFormat::kFp8}) {
        (void)q->CheckLinear(m, f);
      }
    }
  }
  return 0;
}
