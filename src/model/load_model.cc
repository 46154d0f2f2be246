#include <algorithm>
#include <chrono>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "base/mapped_file.h"
#include "dist/runtime.h"
#include "kernels/cpu_features.h"
#include "model/architecture.h"
#include "model/lockstep.h"
#include "model/shard.h"
#include "model/weight_check.h"

namespace tern {

namespace {

// What every rank of a job must load alike, as a short text: a 64-bit FNV-1a
// digest of config.json and of each *.safetensors file (by name): its size,
// header, and 4 KiB at its middle and at its end (so a checkpoint of the same
// shapes but other weights differs too), without reading the weights whole.
std::string ModelFingerprint(const std::string& dir) {
  uint64_t h = 0xcbf29ce484222325ULL;
  auto mix = [&](const void* p, size_t n) {
    for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<const unsigned char*>(p)[i]) * 0x100000001b3ULL;
  };
  std::vector<std::filesystem::path> files = {std::filesystem::path(dir) / "config.json"};
  std::error_code ec;
  std::vector<std::filesystem::path> shards;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.path().extension() == ".safetensors") shards.push_back(e.path());
  std::sort(shards.begin(), shards.end());
  files.insert(files.end(), shards.begin(), shards.end());
  std::string buf;
  for (const auto& f : files) {
    const std::string name = f.filename().string();
    mix(name.data(), name.size());
    std::ifstream in(f, std::ios::binary);
    if (!in) return "unreadable " + f.string();
    in.seekg(0, std::ios::end);
    const uint64_t size = uint64_t(in.tellg());
    mix(&size, sizeof(size));
    constexpr uint64_t kSample = 4096, kHeader = uint64_t(1) << 20;
    for (uint64_t at : {uint64_t(0), size / 2, size > kSample ? size - kSample : 0}) {
      buf.assign(size_t(at == 0 ? std::min(size, kHeader) : std::min(size - at, kSample)), '\0');
      in.seekg(std::streamoff(at));
      in.read(buf.data(), std::streamsize(buf.size()));
      mix(buf.data(), size_t(in.gcount()));
    }
  }
  return fmt::format("{:016x}", h);
}

// The phases of a load, each timed, with a progress line every few seconds of
// a long one (LoadOptions::report_progress).
class LoadReport {
 public:
  using Clock = std::chrono::steady_clock;
  LoadReport(bool on, const std::string& dir) : on_(on) {
    prefix_ = dist::WorldSize() > 1 ? fmt::format("tern: rank {}: {}", dist::WorldRank(), dir) : "tern: " + dir;
  }
  // Ends the current phase, named `what` (with `detail`).
  void Phase(const std::string& what, const std::string& detail = "") {
    const Clock::time_point now = Clock::now();
    const double s = std::chrono::duration<double>(now - phase_start_).count();
    phases_ += fmt::format("{}{} {:.1f} s{}", phases_.empty() ? "" : ", ", what, s, detail.empty() ? "" : " (" + detail + ")");
    phase_start_ = now;
  }
  void Progress(const char* what, int64_t done, int64_t total) {
    const Clock::time_point now = Clock::now();
    if (!on_ || now - last_print_ < std::chrono::seconds(3) || total <= 0) return;
    last_print_ = now;
    const double s = std::chrono::duration<double>(now - phase_start_).count();
    const double eta = done > 0 ? s * double(total - done) / double(done) : 0.0;
    fmt::print(stderr, "{}: {} {:.1f} of {:.1f} GB ({:.0f}%), {:.0f} s, about {:.0f} s left\n", prefix_, what,
               double(done) / 1e9, double(total) / 1e9, 100.0 * double(done) / double(total), s, eta);
  }
  void End() const {
    if (!on_) return;
    const double s = std::chrono::duration<double>(Clock::now() - start_).count();
    fmt::print(stderr, "{}: loaded in {:.1f} s: {}\n", prefix_, s, phases_);
  }

 private:
  bool on_;
  std::string prefix_, phases_;
  Clock::time_point start_ = Clock::now(), phase_start_ = start_, last_print_ = start_;
};

// --huge-pages copies every tensor into anonymous memory: refuse at once what
// does not fit in MemAvailable (a mapping would page it in on demand; a copy
// would be stopped by the OOM killer partway through).
Status CheckHugePageCopyFits(const std::string& dir) {
  std::error_code ec;
  int64_t bytes = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    std::error_code size_ec;
    const uintmax_t size = e.file_size(size_ec);
    if (e.path().extension() == ".safetensors" && !size_ec) bytes += int64_t(size);
  }
  const int64_t avail = AvailableMemoryBytes();
  if (avail >= 0 && bytes > avail)
    return Status::Errorf("--huge-pages: the weight files of {} are {:.2f} GB and {:.2f} GB of memory is available: "
                          "serve without it (the mapped files are paged in as used)",
                          dir, double(bytes) / 1e9, double(avail) / 1e9);
  return Status::Ok();
}

// Loads the whole model as views of the checkpoint, then (under mpirun) keeps
// this rank's part of it; the weight check covers this rank's share of the
// tensors.
Result<std::unique_ptr<DecoderModel>> LoadPart(const std::string& dir, const LoadOptions& opts) {
  TERN_ASSIGN_OR_RETURN(ModelConfig cfg, LoadModelConfig(dir));
  const Architecture* arch = FindArchitecture(cfg.model_type);
  if (arch == nullptr)
    return Status::Errorf("{}/config.json: unknown architecture model_type \"{}\" (supported: {})", dir,
                          cfg.model_type, ArchitectureNames());
  LoadReport report(opts.report_progress, dir);
  if (opts.huge_pages) TERN_RETURN_IF_ERROR(CheckHugePageCopyFits(dir));
  TERN_ASSIGN_OR_RETURN(TensorStore store,
                        TensorStore::OpenDir(dir, opts.huge_pages ? TensorMemory::kHugePageCopy
                                                                  : TensorMemory::kMapped));
  int64_t mapped = 0;
  for (const auto& [name, t] : store.all()) mapped += int64_t(t.nbytes);
  if (opts.huge_pages) {
    // What the kernel granted: MADV_HUGEPAGE is advice (THP "never", or memory too fragmented, leaves 4 KiB pages).
    const int64_t huge = AnonHugePageBytes();
    report.Phase("read into huge pages", fmt::format("{} tensors, {:.2f} GB; {} in huge pages", store.all().size(),
                                                     double(mapped) / 1e9,
                                                     huge < 0 ? std::string("unknown")
                                                              : fmt::format("{:.2f} GB", double(huge) / 1e9)));
    if (huge >= 0 && huge < mapped / 2)
      fmt::print(stderr, "tern: warning: --huge-pages: only {:.2f} of {:.2f} GB of weights are in huge pages "
                         "(/sys/kernel/mm/transparent_hugepage/enabled must be madvise or always)\n",
                 double(huge) / 1e9, double(mapped) / 1e9);
  } else {
    report.Phase("mapped", fmt::format("{} tensors, {:.2f} GB", store.all().size(), double(mapped) / 1e9));
  }
  LoadOptions o = opts;
  if (o.threads == 0 && dist::LocalSize() > 1)  // ranks sharing a host share its cores
    o.threads = std::max<size_t>(1, std::thread::hardware_concurrency() / size_t(dist::LocalSize()));
  auto m = std::make_unique<DecoderModel>(std::move(cfg), std::move(store), o);
  Status s = LoadQwenFamily(*m, *arch);
  if (!s.ok()) return s.WithContext(fmt::format("loading {}", dir));
  // Buffers HF keeps in some checkpoints, the vision tower of wrapped
  // checkpoints, which text generation does not use, and mtp.* when the config
  // gives the MTP head no layers (as transformers ignores it). A loaded head
  // must use every mtp.* tensor.
  std::vector<std::string> ignored = {"model.rotary_emb.", "rotary_emb.", "model.visual."};
  if (!m->mtp) ignored.push_back("mtp.");
  TERN_RETURN_IF_ERROR(m->CheckAllTensorsUsed(ignored));
  report.Phase("layers", fmt::format("{} of {}", m->layers.size(), m->config().model_type));
  const int world = dist::WorldSize(), rank = dist::WorldRank();
  if (opts.weight_check != WeightCheck::kSkip) {
    const std::vector<NonFiniteTensor> bad = FindNonFiniteWeights(
        m->store(), m->pool(), rank, world,
        [&](int64_t done, int64_t total) { report.Progress("checking the weights for NaN/Inf:", done, total); });
    // The weights read so far (the check reads every float tensor; the pages around them come in with them):
    // how many are in huge pages (MappedFile::Open). (A rank of several has read only its share.)
    const ResidentPages pages =
        opts.huge_pages || world > 1 ? ResidentPages{} : FileMappingPages(".safetensors");
    std::string check = world > 1 ? fmt::format("this rank's 1/{} of the tensors", world) : "";
    if (pages.resident > 0)
      check += fmt::format("{}{:.2f} of the {:.2f} GB of weights read in huge pages", check.empty() ? "" : "; ",
                           double(pages.huge) / 1e9, double(pages.resident) / 1e9);
    report.Phase("weight check", check);
    if (pages.resident >= (int64_t(256) << 20) && pages.huge < pages.resident / 2)
      fmt::print(stderr,
                 "tern: note: {:.2f} of the {:.2f} GB of weights read are mapped in huge pages (the page cache holds "
                 "the files in small pages); decode reads huge pages faster: --huge-pages copies the weights into "
                 "them, or evict the files from the page cache before loading\n",
                 double(pages.huge) / 1e9, double(pages.resident) / 1e9);
    if (!bad.empty() && opts.weight_check == WeightCheck::kError)
      return Status::Errorf("loading {}: weights hold NaN or Inf: {}", dir, DescribeNonFinite(bad));
    if (!bad.empty())
      fmt::print(stderr, "tern: warning: {}: weights hold NaN or Inf (served anyway; --strict-weights refuses): {}\n",
                 dir, DescribeNonFinite(bad));
  }
  if (world > 1 || opts.tp > 1 || opts.ep > 1) {
    // (LoadModel created the group communicator before any rank could fail.)
    const ShardSpec spec{.tp = opts.tp, .ep = opts.ep, .rank = rank, .world = world,
                         .tp_group = &dist::Group(opts.tp), .world_comm = &dist::World()};
    TERN_RETURN_IF_ERROR(ShardModel(*m, spec).WithContext(fmt::format("splitting {} over {} ranks", dir, world)));
    // The checks and the slicing read whole tensors; keep resident only what
    // this rank's part touches from now on.
    m->store().DropResidentPages();
    report.Phase("split", fmt::format("{:.2f} GB held here", double(m->WeightBytes()) / 1e9));
  }
  report.End();
  return m;
}

}  // namespace

Result<std::unique_ptr<Model>> LoadModel(const std::string& dir, const LoadOptions& opts) {
  if (opts.huge_pages && (dist::WorldSize() > 1 || opts.tp > 1 || opts.ep > 1))
    return Status::Error("--huge-pages holds a copy of every tensor: refused under mpirun with several ranks "
                         "(each rank copies out its own slices of the mapped files)");
  if (!dist::Launched()) {
    if (opts.tp > 1 || opts.ep > 1)
      return Status::Errorf("--tp {} --ep {} runs one process per rank: start it with mpirun -np {}{}", opts.tp,
                            opts.ep, std::max(opts.tp, opts.ep),
                            dist::BuiltWithMpi() ? "" : " (and build tern with MPI: install libopenmpi-dev)");
    TERN_ASSIGN_OR_RETURN(std::unique_ptr<DecoderModel> m, LoadPart(dir, opts));
    return std::unique_ptr<Model>(std::move(m));
  }
  // Every rank checks the layout, creates the communicators, loads its part,
  // and all agree at each step: one rank's error fails them all, and no rank
  // is left in a collective the others never reach.
  TERN_RETURN_IF_ERROR(dist::AgreeOnStatus(CheckParallelism(opts.tp, opts.ep, dist::WorldSize())));
  // Ranks started with other flags would wait in different collectives, and
  // ranks whose CPU paths or numerics differ could route a token's near-tied
  // experts differently (every rank routes from its own replicated router).
  TERN_RETURN_IF_ERROR(dist::AgreeOnText(
      fmt::format("--tp {} --ep {}, {} activations for quantized layers, cpu path {}", opts.tp, opts.ep,
                  ActivationNumericsName(opts.numerics), kernels::CpuPathName()),
      "its parallel layout and numerics (set the same flags, and TERN_CPU_PATH if the hosts' CPUs differ)"));
  (void)dist::Group(opts.tp);
  // An exception (std::bad_alloc copying this rank's slices) is this rank's
  // error like any other: thrown past the agreement, it left the other ranks
  // waiting in it forever while this one finalized.
  Result<std::unique_ptr<DecoderModel>> part = Status::Error("not loaded");
  try {
    part = LoadPart(dir, opts);
  } catch (const std::exception& e) {
    part = Status::Errorf("loading {} failed: {}", dir, e.what());
  }
  TERN_RETURN_IF_ERROR(dist::AgreeOnStatus(part.ok() ? Status::Ok() : part.status()));
  std::string fingerprint;
  try {  // (a directory iterator throws on a failing increment: this rank's record, not a hang of the others)
    fingerprint = ModelFingerprint(dir);
  } catch (const std::exception& e) {
    fingerprint = std::string("unreadable: ") + e.what();
  }
  TERN_RETURN_IF_ERROR(dist::AgreeOnText(
      fingerprint, "its model files (a digest of config.json and of the safetensors files' headers and samples)"));
  std::unique_ptr<Model> m = std::move(*part);
  if (dist::WorldRank() != 0 || dist::WorldSize() == 1) return m;
  return MakeLockstepModel(std::move(m), dist::World());
}

}  // namespace tern
