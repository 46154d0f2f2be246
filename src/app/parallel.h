// --tp / --ep for the commands that run a model (serve, generate, bench), and
// what the ranks other than 0 of an mpirun job do: load their part of the
// model and follow rank 0 (model/lockstep.h) until it stops.
#pragma once

#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "model/model.h"

namespace tern::app {

struct ParallelOptions {
  int tp = 1;  // --tp / --tp-size / --tensor-parallel-size
  int ep = 1;  // --ep / --ep-size / --expert-parallel-size
};
std::shared_ptr<ParallelOptions> AddParallelOptions(CLI::App& app);

// True on ranks other than 0 of an mpirun job.
bool IsWorkerRank();
// A worker rank's whole command: LoadModel (agreeing with every rank), then
// RunWorker. SIGTERM and SIGINT are ignored: mpirun forwards them to every
// rank, and only rank 0 decides when to stop (it drains first). Returns the
// exit status.
int RunShardWorker(const std::string& dir, const LoadOptions& opts);

// This process's resident memory (VmRSS), in bytes; 0 when unknown.
int64_t ResidentBytes();

// End of main on every rank: rank 0 releases ranks still waiting for it (a
// command that failed before loading the model), then MPI ends.
void FinishRanks(int exit_code);

}  // namespace tern::app
