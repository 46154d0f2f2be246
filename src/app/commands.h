// The `tern` subcommands. Each Register* adds its options to the CLI and
// returns the function that runs it; the function returns the process exit code.
#pragma once

#include <functional>
#include <vector>

#include <CLI/CLI.hpp>

#include "base/status.h"
#include "engine/speculative.h"
#include "model/linear.h"

namespace tern::app {

using Command = std::function<int()>;

Command RegisterGenerate(CLI::App& app);
Command RegisterTokenize(CLI::App& app);
Command RegisterDetokenize(CLI::App& app);
Command RegisterSynth(CLI::App& app);
Command RegisterBench(CLI::App& app);
Command RegisterTemplate(CLI::App& app);
Command RegisterServe(CLI::App& app);
Command RegisterBenchServing(CLI::App& app);
Command RegisterQuantize(CLI::App& app);
Command RegisterService(CLI::App& app);
// `tern check` with the engine as the numerics suite's --reference-model (cmd_check.cc).
Command RegisterCheck(CLI::App& app);
Command RegisterPlan(CLI::App& app);
// `tern service install [options] -- [serve flags]`: drops that "--" from argv
// before parsing (CLI11 rejects arguments after it there; without it, the serve
// flags are taken from the first flag install does not know).
void DropServiceInstallSeparator(std::vector<char*>& argv);

// Adds --quant-numerics (w4a16 | w4a4 | w4a8) to a command; the returned function
// reads the parsed choice.
std::function<Result<ActivationNumerics>()> AddQuantNumericsOption(CLI::App& app);
// Adds --speculative-algorithm and its options (SGLang's names); the returned
// function reads and checks them (algorithm kNone when not given).
std::function<Result<SpeculativeOptions>()> AddSpeculativeOptions(CLI::App& app);

// The bundled demo model (models/demo of the source tree, set at build time):
// the default --model of serve and generate.
inline const char* BundledModelDir() { return TERN_BUNDLED_MODEL_DIR; }

// Prints "tern: <message>" to stderr and returns 1.
int Fail(const std::string& message);

}  // namespace tern::app
