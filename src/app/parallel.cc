#include "app/parallel.h"

#include <csignal>
#include <cstdio>
#include <exception>
#include <unistd.h>

#include <fmt/format.h>

#include "app/commands.h"
#include "dist/runtime.h"
#include "model/lockstep.h"

namespace tern::app {

std::shared_ptr<ParallelOptions> AddParallelOptions(CLI::App& app) {
  auto p = std::make_shared<ParallelOptions>();
  app.add_option("--tp,--tp-size,--tensor-parallel-size", p->tp,
                 "tensor-parallel ranks (run under mpirun -np N): attention heads, MLP and linear-attention heads "
                 "split, partial sums all-reduced")
      ->default_val(1);
  app.add_option("--ep,--ep-size,--expert-parallel-size", p->ep,
                 "expert-parallel ranks (1, or every rank of the job): each holds a share of the MoE experts")
      ->default_val(1);
  return p;
}

bool IsWorkerRank() { return dist::Launched() && dist::WorldRank() != 0; }

int RunShardWorker(const std::string& dir, const LoadOptions& opts) {
  std::signal(SIGTERM, SIG_IGN);
  std::signal(SIGINT, SIG_IGN);
  auto model = LoadModel(dir, opts);
  if (!model.ok()) return Fail(model.status().message());
  // A rank that cannot go on ends the job: the others wait in a collective
  // it will never join.
  Status st = Status::Ok();
  try {
    st = RunWorker(**model, dist::World());
  } catch (const std::exception& e) {
    st = Status::Errorf("rank {}: {}", dist::WorldRank(), e.what());
  }
  if (!st.ok()) {
    fmt::print(stderr, "tern: {}\n", st.message());
    dist::Abort(1);
  }
  fmt::print(stderr, "tern: rank {}: done; {} MiB resident, {} MiB of weights held\n", dist::WorldRank(),
             ResidentBytes() >> 20, (*model)->WeightBytes() >> 20);
  return 0;
}

int64_t ResidentBytes() {
  // /proc/self/statm: size resident shared text lib data dt, in pages.
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  long long size = 0, resident = 0;
  const int n = std::fscanf(f, "%lld %lld", &size, &resident);
  std::fclose(f);
  return n == 2 ? int64_t(resident) * int64_t(sysconf(_SC_PAGESIZE)) : 0;
}

void FinishRanks(int exit_code) {
  if (!dist::Launched()) return;
  if (dist::WorldRank() == 0 && !dist::Agreed())
    (void)dist::AgreeOnStatus(Status::Errorf("the command stopped before loading the model (exit status {})",
                                             exit_code));
  dist::Finalize();
}

}  // namespace tern::app
