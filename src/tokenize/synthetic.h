// A synthetic but real tokenizer for test checkpoints (`tern synth`).
//
// MakeSyntheticTokenizerJson builds a byte-level BPE tokenizer.json shaped
// like Qwen3's: NFC normalizer, Qwen3's pre-tokenizer regex (Isolated) then
// ByteLevel, the 256 byte tokens (in GPT-2 order, as in Qwen3), merges learnt
// from a built-in English text, and Qwen3's added tokens at the end of the
// vocabulary with Qwen3's flags:
//   <|endoftext|> <|im_start|> <|im_end|>             special
//   <tool_call> </tool_call> <tool_response> </tool_response> <think> </think>
//                                                     not special
// The Hugging Face tokenizers library loads it and encodes alike (checked by
// tokenize_synthetic_test against goldens from it).
#pragma once

#include <cstdint>
#include <string>

namespace tern {

// vocab_size() of the result is max(vocab_size_hint, 265): merges are learnt
// while the text allows, then unreachable filler tokens make up the rest.
// Deterministic: the same hint always gives the same bytes.
std::string MakeSyntheticTokenizerJson(int32_t vocab_size_hint);

// The official chat templates a synthetic checkpoint can carry: Qwen3's
// (Qwen3, Qwen3-MoE) or Qwen3.5's (its generation prompt opens <think>, tool
// calls are Qwen3-Coder XML), as the real checkpoints of each family ship.
enum class SyntheticChatTemplate { kQwen3, kQwen35 };

// A tokenizer_config.json for it: eos <|im_end|>, pad <|endoftext|>, no bos,
// model_max_length 32768 and the given official chat template.
std::string SyntheticTokenizerConfigJson(SyntheticChatTemplate chat_template = SyntheticChatTemplate::kQwen3);

}  // namespace tern
