// tern_tokenize_dump_synthetic HINT OUT_DIR: writes MakeSyntheticTokenizerJson(HINT)
// and SyntheticTokenizerConfigJson() as OUT_DIR/tokenizer.json and
// OUT_DIR/tokenizer_config.json (used by tools/tokenizer/make_goldens.mjs to
// check the synthetic tokenizer against Hugging Face's).
#include <cstdio>
#include <cstdlib>
#include <string>

#include "base/mapped_file.h"
#include "tokenize/synthetic.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s VOCAB_SIZE_HINT OUT_DIR\n", argv[0]);
    return 2;
  }
  const int hint = std::atoi(argv[1]);
  const std::string dir = argv[2];
  tern::Status s = tern::WriteStringToFile(dir + "/tokenizer.json",
                                           tern::MakeSyntheticTokenizerJson(hint));
  if (s.ok()) {
    s = tern::WriteStringToFile(dir + "/tokenizer_config.json",
                                tern::SyntheticTokenizerConfigJson());
  }
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.message().c_str());
    return 1;
  }
  return 0;
}
