// tern_check_driver: `tern check` without the rest of tern, for this module's
// tests and for running the battery where the tern binary is not built.
//   tern_check_driver check --url http://127.0.0.1:30000 --suite full
#include <CLI/CLI.hpp>

#include "check/cli.h"

int main(int argc, char** argv) {
  CLI::App app{"tern check, standalone"};
  app.require_subcommand(1);
  CLI::App* sub = app.add_subcommand("check", "validate a running OpenAI-compatible server");
  auto run = tern::check::RegisterCheck(*sub);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  return run();
}
