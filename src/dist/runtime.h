// The distributed runtime: whether this process was started by mpirun (Open
// MPI or MPICH), its rank, and the communicators tensor and expert
// parallelism use. Without mpirun (or in a build without MPI) there is one
// rank and nothing here does anything.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "dist/comm.h"

namespace tern::dist {

// Starts MPI when the environment says mpirun launched this process
// (OMPI_COMM_WORLD_SIZE, PMI_SIZE or PMIX_RANK); a no-op otherwise. Call once
// at the start of main.
Status Init(int* argc, char*** argv);
// Ends MPI (after the command finished on every rank). Safe to call always.
void Finalize();
// Ends every rank of the job at once with `code` (a rank that cannot go on).
[[noreturn]] void Abort(int code);

bool Launched();  // Init started MPI
int WorldRank();  // 0 without MPI
int WorldSize();  // 1 without MPI
// Ranks of this job on this host (threads per rank default to cores / this).
int LocalSize();
bool BuiltWithMpi();
// "Open MPI v4.1.4" / "MPICH 4.0.2" / "none".
std::string LibraryVersion();

// Every rank of the job.
Comm& World();
// Ranks [g * size, (g + 1) * size) for this rank's g: the tensor-parallel
// group of `size` ranks. Created on first use (collective: every rank must
// ask for the same size at the same point).
Comm& Group(int size);

}  // namespace tern::dist

namespace tern::dist {

// Startup agreement: every rank of the world passes its own outcome (of
// loading its part of the model, say) and gets the same answer back -- Ok
// when every rank succeeded, else the first failing rank's error, named
// ("rank 1: model directory /m does not exist"). Collective over World();
// the first call also marks the job as started (see Finalize).
Status AgreeOnStatus(const Status& local);
// Startup agreement on a description every rank must share (its parallel
// layout, a fingerprint of its model files): Ok when every rank's equals rank
// 0's, else an error naming the first rank that differs, `what`, and both
// descriptions (each cut at 1 KiB). Collective over World().
Status AgreeOnText(const std::string& mine, const std::string& what);
// Whether AgreeOnStatus ran.
bool Agreed();
// Run by Finalize before MPI ends, last registered first (rank 0 tells the
// other ranks to stop there if it has not yet).
void AtFinalize(void (*fn)());

}  // namespace tern::dist
