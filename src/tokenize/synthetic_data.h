// Built-in data of the synthetic tokenizer (see synthetic.h).
#pragma once

namespace tern::tok {

// A few KB of English text from which the synthetic merges are learnt.
extern const char* const kSyntheticCorpus;
// Qwen3's chat template, verbatim.
extern const char* const kQwen3ChatTemplate;
// Qwen3.5's chat template, verbatim.
extern const char* const kQwen35ChatTemplate;

}  // namespace tern::tok
