#include "dist/runtime.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <thread>
#include <vector>

#include <fmt/format.h>

#ifdef TERN_HAVE_MPI
#include <mpi.h>
#endif

namespace tern::dist {
namespace {

// One rank alone: every collective is a copy or nothing.
class SelfComm final : public Comm {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void AllReduceSum(float*, int64_t) override {}
  void Broadcast(void*, int64_t, int) override {}
  void Gather(const float* send, int64_t n, float* recv, int) override {
    if (recv != send) std::memcpy(recv, send, size_t(n) * sizeof(float));
  }
  void AllGather(const void* send, int64_t bytes, void* recv) override {
    if (recv != send) std::memcpy(recv, send, size_t(bytes));
  }
};

bool g_launched = false;
int g_rank = 0, g_size = 1, g_local_size = 1;
SelfComm g_self;

#ifdef TERN_HAVE_MPI
// MPI counts are int: larger transfers go in pieces of at most this many elements.
constexpr int64_t kMaxCount = int64_t(1) << 30;

class MpiComm final : public Comm {
 public:
  explicit MpiComm(MPI_Comm c) : comm_(c) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void AllReduceSum(float* data, int64_t n) override {
    for (int64_t i = 0; i < n; i += kMaxCount)
      MPI_Allreduce(MPI_IN_PLACE, data + i, int(std::min(kMaxCount, n - i)), MPI_FLOAT, MPI_SUM, comm_);
  }
  void Broadcast(void* data, int64_t bytes, int root) override {
    auto* p = static_cast<char*>(data);
    for (int64_t i = 0; i < bytes; i += kMaxCount)
      MPI_Bcast(p + i, int(std::min(kMaxCount, bytes - i)), MPI_BYTE, root, comm_);
  }
  void Gather(const float* send, int64_t n, float* recv, int root) override {
    if (n > kMaxCount) {  // rare: one point-to-point transfer per rank, in pieces
      if (rank_ == root) {
        std::memcpy(recv + int64_t(root) * n, send, size_t(n) * sizeof(float));
        for (int r = 0; r < size_; ++r)
          if (r != root)
            for (int64_t i = 0; i < n; i += kMaxCount)
              MPI_Recv(recv + int64_t(r) * n + i, int(std::min(kMaxCount, n - i)), MPI_FLOAT, r, 7, comm_,
                       MPI_STATUS_IGNORE);
      } else {
        for (int64_t i = 0; i < n; i += kMaxCount)
          MPI_Send(send + i, int(std::min(kMaxCount, n - i)), MPI_FLOAT, root, 7, comm_);
      }
      return;
    }
    MPI_Gather(send, int(n), MPI_FLOAT, recv, int(n), MPI_FLOAT, root, comm_);
  }
  void AllGather(const void* send, int64_t bytes, void* recv) override {
    MPI_Allgather(send, int(bytes), MPI_BYTE, recv, int(bytes), MPI_BYTE, comm_);
  }

 private:
  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
};

std::unique_ptr<MpiComm> g_world;
std::map<int, std::unique_ptr<MpiComm>> g_groups;
#endif

bool LaunchedByMpirun() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "PMI_RANK"})
    if (std::getenv(v) != nullptr) return true;
  return false;
}

}  // namespace

Status Init(int* argc, char*** argv) {
  if (!LaunchedByMpirun()) return Status::Ok();
#ifdef TERN_HAVE_MPI
  // The engine thread makes every collective of rank 0 after the main thread
  // loaded the model: one thread at a time, not always the same one.
  int provided = 0;
  if (MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
    return Status::Error("MPI_Init_thread failed");
  if (provided < MPI_THREAD_SERIALIZED)
    return Status::Errorf("the MPI library gives thread level {}; tern needs MPI_THREAD_SERIALIZED ({})", provided,
                          int(MPI_THREAD_SERIALIZED));
  g_launched = true;
  g_world = std::make_unique<MpiComm>(MPI_COMM_WORLD);
  g_rank = g_world->rank();
  g_size = g_world->size();
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
  MPI_Comm_size(local, &g_local_size);
  MPI_Comm_free(&local);
  return Status::Ok();
#else
  (void)argc, (void)argv;
  return Status::Error(
      "started by mpirun, but this tern was built without MPI (install libopenmpi-dev or libmpich-dev and rebuild)");
#endif
}

namespace {
bool g_agreed = false;
std::vector<void (*)()> g_at_finalize;
}  // namespace

Status AgreeOnStatus(const Status& local) {
  g_agreed = true;
  Comm& w = World();
  if (w.size() == 1) return local;
  // One fixed-size record per rank: a failure flag and the message.
  constexpr size_t kMessage = 2048;
  std::string mine(kMessage, '\0');
  mine[0] = local.ok() ? 0 : 1;
  const std::string& msg = local.ok() ? std::string() : local.message();
  std::memcpy(mine.data() + 1, msg.data(), std::min(msg.size(), kMessage - 2));
  std::string all(kMessage * size_t(w.size()), '\0');
  w.AllGather(mine.data(), int64_t(kMessage), all.data());
  int failed = 0, first = -1;
  for (int r = 0; r < w.size(); ++r)
    if (all[size_t(r) * kMessage] != 0) failed += 1, first = first < 0 ? r : first;
  if (failed == 0) return Status::Ok();
  const std::string text(all.data() + size_t(first) * kMessage + 1);
  return Status::Errorf("rank {}: {}{}", first, text,
                        failed > 1 ? fmt::format(" (and {} more ranks failed)", failed - 1) : "");
}

Status AgreeOnText(const std::string& mine, const std::string& what) {
  Comm& w = World();
  if (w.size() == 1) return Status::Ok();
  constexpr size_t kText = 1024;
  std::string record(kText, '\0');
  std::memcpy(record.data(), mine.data(), std::min(mine.size(), kText - 1));
  std::string all(kText * size_t(w.size()), '\0');
  w.AllGather(record.data(), int64_t(kText), all.data());
  const std::string first(all.data());
  for (int r = 1; r < w.size(); ++r) {
    const std::string theirs(all.data() + size_t(r) * kText);
    if (theirs != first)
      return Status::Errorf("rank {} differs from rank 0 in {}: '{}' against '{}'", r, what, theirs, first);
  }
  return Status::Ok();
}

bool Agreed() { return g_agreed; }
void AtFinalize(void (*fn)()) { g_at_finalize.push_back(fn); }

void Finalize() {
#ifdef TERN_HAVE_MPI
  if (!g_launched) return;
  for (auto it = g_at_finalize.rbegin(); it != g_at_finalize.rend(); ++it) (*it)();
  g_at_finalize.clear();
  g_groups.clear();
  g_world.reset();
  MPI_Finalize();
  g_launched = false;
#endif
}

void Abort(int code) {
#ifdef TERN_HAVE_MPI
  if (g_launched) MPI_Abort(MPI_COMM_WORLD, code);
#endif
  std::_Exit(code);
}

bool Launched() { return g_launched; }
int WorldRank() { return g_rank; }
int WorldSize() { return g_size; }
int LocalSize() { return g_local_size; }

bool BuiltWithMpi() {
#ifdef TERN_HAVE_MPI
  return true;
#else
  return false;
#endif
}

std::string LibraryVersion() {
#ifdef TERN_HAVE_MPI
  char buf[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(buf, &len);
  std::string v(buf, size_t(std::max(0, len)));
  const size_t nl = v.find_first_of("\n,");
  return nl == std::string::npos ? v : v.substr(0, nl);
#else
  return "none";
#endif
}

Comm& World() {
#ifdef TERN_HAVE_MPI
  if (g_world) return *g_world;
#endif
  return g_self;
}

Comm& Group(int size) {
#ifdef TERN_HAVE_MPI
  if (g_world && size > 1) {
    auto& g = g_groups[size];
    if (!g) {
      MPI_Comm c;
      MPI_Comm_split(MPI_COMM_WORLD, g_rank / size, g_rank, &c);
      g = std::make_unique<MpiComm>(c);
    }
    return *g;
  }
#endif
  (void)size;
  return g_self;
}

}  // namespace tern::dist
