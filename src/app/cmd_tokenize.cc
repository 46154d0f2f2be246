// `tern tokenize` and `tern detokenize`.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "app/commands.h"
#include "app/model_files.h"

namespace tern::app {

Command RegisterTokenize(CLI::App& app) {
  struct Opts { std::string model, text; bool no_special = false; };
  auto o = std::make_shared<Opts>();
  app.add_option("--model", o->model, "model directory (with tokenizer.json)")->required();
  app.add_option("--text", o->text, "text to encode")->required();
  app.add_flag("--no-special-tokens", o->no_special, "do not add the post-processor's special tokens (BOS)");
  return [o]() {
    auto tok = LoadTokenizer(o->model);
    if (!tok.ok()) return Fail(tok.status().message());
    auto ids = tok->Encode(o->text, !o->no_special);
    if (!ids.ok()) return Fail(ids.status().message());
    fmt::print("[{}]\n", fmt::join(*ids, ","));
    return 0;
  };
}

Command RegisterDetokenize(CLI::App& app) {
  struct Opts { std::string model, ids; bool skip_special = false; };
  auto o = std::make_shared<Opts>();
  app.add_option("--model", o->model, "model directory (with tokenizer.json)")->required();
  app.add_option("--ids", o->ids, "comma-separated token ids")->required();
  app.add_flag("--skip-special-tokens", o->skip_special, "drop special tokens from the text");
  return [o]() {
    auto tok = LoadTokenizer(o->model);
    if (!tok.ok()) return Fail(tok.status().message());
    auto ids = ParseIds(o->ids);
    if (!ids.ok()) return Fail(ids.status().message());
    auto text = tok->Decode(*ids, o->skip_special);
    if (!text.ok()) return Fail(text.status().message());
    fmt::print("{}\n", *text);
    return 0;
  };
}

}  // namespace tern::app
