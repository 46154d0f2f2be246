// `tern check`: the command line of the validation battery.
//
// The app registers it like the other subcommands:
//   add("check", "validate a running OpenAI-compatible server", tern::check::RegisterCheck);
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

#include "check/numerics_reference.h"
#include "check/options.h"

namespace tern::check {

// Adds the options of `tern check` to `sub` and returns the function that runs
// it. The function prints the table to stdout (colour when stdout is a
// terminal and NO_COLOR is unset), readiness progress to stderr, writes the
// --json and --junit reports, and returns the exit code: 0 every check
// passed, 1 a check failed, 2 the server could not be reached, never became
// ready, or a report could not be written.
// `loader` runs --reference-model for --suite numerics (the tern binary
// passes its engine; without one only --reference-url works).
std::function<int()> RegisterCheck(CLI::App& sub, ReferenceLoader loader = nullptr);

// `tern wait`: exit 0 once the server answers /health and generates a token
// (wait_cli.cc); 1 when --timeout passes first.
std::function<int()> RegisterWait(CLI::App& sub);

// The same, for options already filled in (tests, other drivers).
int RunCheckCommand(const CheckOptions& options);

}  // namespace tern::check
