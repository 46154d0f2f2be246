// Comm: the collectives tensor and expert parallelism need, over a group of
// ranks (processes, on one host or many). The MPI implementation is in
// mpi_runtime.cc; nothing else in tern includes <mpi.h>.
//
// Every call is collective: each rank of the group makes the same calls in
// the same order, with the same sizes. A rank that dies makes the others'
// calls fail, which ends the job (MPI's default error handler; mpirun names
// the lost rank) -- never a hang.
#pragma once

#include <cstdint>

namespace tern::dist {

class Comm {
 public:
  virtual ~Comm() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // data[0, n) <- the elementwise sum of every rank's data, on every rank.
  virtual void AllReduceSum(float* data, int64_t n) = 0;
  // data[0, bytes) <- root's data[0, bytes), on every rank.
  virtual void Broadcast(void* data, int64_t bytes, int root) = 0;
  // On root: recv[r * n, (r + 1) * n) <- rank r's send[0, n); recv is unused elsewhere.
  virtual void Gather(const float* send, int64_t n, float* recv, int root) = 0;
  // recv[r * bytes, (r + 1) * bytes) <- rank r's send[0, bytes), on every rank.
  virtual void AllGather(const void* send, int64_t bytes, void* recv) = 0;
};

}  // namespace tern::dist
