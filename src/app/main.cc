// tern: one binary, one subcommand per job.
#include <cstdio>
#include <exception>
#include <map>
#include <new>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "app/commands.h"
#include "app/parallel.h"
#include "dist/runtime.h"
#include "check/cli.h"
#include "kernels/cpu_features.h"

namespace tern::app {
int Fail(const std::string& message) {
  fmt::print(stderr, "tern: {}\n", message);
  return 1;
}
}  // namespace tern::app

int main(int argc, char** argv) {
  using namespace tern::app;
  CLI::App app{"tern: serve Mixture-of-Experts language models from Hugging Face checkpoints"};
  app.require_subcommand(1);
  std::map<CLI::App*, Command> commands;
  auto add = [&](const char* name, const char* help, Command (*reg)(CLI::App&)) {
    CLI::App* sub = app.add_subcommand(name, help);
    commands[sub] = reg(*sub);
  };
  add("serve", "serve a model over the OpenAI and SGLang HTTP APIs", RegisterServe);
  add("generate", "generate text from a prompt", RegisterGenerate);
  add("tokenize", "print the token ids of a text as a JSON array", RegisterTokenize);
  add("detokenize", "print the text of token ids", RegisterDetokenize);
  add("synth", "write a synthetic Hugging Face checkpoint with random weights", RegisterSynth);
  add("template", "print the prompt that chat messages render to with the model's chat template", RegisterTemplate);
  add("check", "validate a running OpenAI-compatible server (tern, SGLang, vLLM, llama.cpp)", RegisterCheck);
  add("wait", "wait until a server is healthy and generates a token (exit 0), or --timeout passes (exit 1)",
      tern::check::RegisterWait);
  add("bench-serving", "load-test a running server (throughput, TTFT, inter-token latency)", RegisterBenchServing);
  add("bench", "measure prefill and decode speed against the memory bandwidth", RegisterBench);
  add("quantize", "write an NVFP4 or FP8 checkpoint (ModelOpt layout) from a BF16 one", RegisterQuantize);
  add("service", "run tern serve as a systemd service: install, status, uninstall", RegisterService);
  add("plan", "per-rank weight, KV cache and request capacity of a sharded deployment, from the configs alone",
      RegisterPlan);
  try {
    std::vector<char*> args(argv, argv + argc);
    DropServiceInstallSeparator(args);
    app.parse(int(args.size()), args.data());
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  // Library code reports errors as Status; what still throws (a thread the OS
  // refuses, memory exhausted at start-up) ends the command with a message and
  // exit status 1, never an uncaught-exception abort.
  // Under mpirun every rank runs the same command line (app/parallel.h).
  if (tern::Status st = tern::dist::Init(&argc, &argv); !st.ok()) return Fail(st.message());
  // TERN_CPU_PATH=avx2 (etc.) runs lower kernels than the CPU allows, for A/B runs (kernels/cpu_features.h).
  if (tern::Status st = tern::kernels::SetCpuPathFromEnvironment(); !st.ok()) return Fail(st.message());
  int code = 2;
  for (auto& [sub, run] : commands) {
    if (!sub->parsed()) continue;
    try {
      code = run();
    } catch (const std::bad_alloc&) {
      code = Fail(fmt::format("{}: out of memory", sub->get_name()));
    } catch (const std::exception& e) {
      code = Fail(fmt::format("{}: {}", sub->get_name(), e.what()));
    }
  }
  FinishRanks(code);
  return code;
}
