#include "child/child_support.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/sandbox.h"
#include "common/sha256.h"
#include "common/strings.h"

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>

#include "common/cuda_check.h"
#include "common/dynamic_library.h"
#include "run/channel.h"
#include "run/protocol.h"
#include "task/device_ops.h"

namespace ptxbench {

namespace {

// Guarded device memory. cudaMalloc rounds small buffers up (512 B, then 2 MiB pages), so a
// read just past an input lands in slack and never faults: a candidate that skips such a read
// only under the memory checker passed it. Here an unmapped granule lies on either side of each
// mapping and the buffer sits against one of its edges: its end (to cudaMalloc's 256-byte
// alignment) or its start. Only one edge can be exact (mappings come in 2 MiB granules), so the
// trials alternate: an access past the end faults in the end-guarded ones, an access before the
// start in the start-guarded ones, with or without a checker. The driver's virtual
// memory API comes from libcuda at run time: linking it would stop ptxbench from starting on a
// machine without a driver.
struct VmmApi {
  decltype(&cuMemGetAllocationGranularity) granularity = nullptr;
  decltype(&cuMemAddressReserve) reserve = nullptr;
  decltype(&cuMemAddressFree) address_free = nullptr;
  decltype(&cuMemCreate) create = nullptr;
  decltype(&cuMemRelease) release = nullptr;
  decltype(&cuMemMap) map = nullptr;
  decltype(&cuMemUnmap) unmap = nullptr;
  decltype(&cuMemSetAccess) set_access = nullptr;
  std::string missing;
};

const VmmApi& Vmm() {
  static const VmmApi api = [] {
    VmmApi a;
    std::optional<DynamicLibrary> lib = DynamicLibrary::Open("libcuda.so.1");
    if (!lib) {
      a.missing = "libcuda.so.1 cannot be opened";
      return a;
    }
    SymbolBinder binder(*lib);
    binder.Require(a.granularity, "cuMemGetAllocationGranularity");
    binder.Require(a.reserve, "cuMemAddressReserve");
    binder.Require(a.address_free, "cuMemAddressFree");
    binder.Require(a.create, "cuMemCreate");
    binder.Require(a.release, "cuMemRelease");
    binder.Require(a.map, "cuMemMap");
    binder.Require(a.unmap, "cuMemUnmap");
    binder.Require(a.set_access, "cuMemSetAccess");
    a.missing = binder.missing();
    return a;
  }();
  return api;
}

// The driver calls above fail as "guarded allocation: <call> failed (CUresult <n>)".
constexpr CudaDriverStatus kGuardedAllocation{"guarded allocation"};

struct Mapping {
  CUdeviceptr base = 0;  // start of the reserved range (a guard granule)
  size_t reserved = 0;
  size_t mapped = 0;
  CUmemGenericAllocationHandle handle = 0;
};

bool g_guard_pages = true;
std::mutex g_mutex;
std::map<void*, Mapping> g_mappings;

constexpr size_t kAlignment = 256;  // what cudaMalloc promises, and what candidates assume

size_t RoundUp(size_t n, size_t to) { return (n + to - 1) / to * to; }

void* GuardedAlloc(size_t bytes, GuardedEdge edge) {
  const VmmApi& api = Vmm();
  if (!api.missing.empty())
    throw std::runtime_error("guarded allocation unavailable: " + api.missing);
  PTXBENCH_CUDA_CHECK(cudaFree(nullptr));  // the runtime's context is the current one
  int device = 0;
  PTXBENCH_CUDA_CHECK(cudaGetDevice(&device));
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  size_t granule = 0;
  PTXBENCH_CHECK_STATUS(kGuardedAllocation,
                        api.granularity(&granule, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED),
                        "cuMemGetAllocationGranularity");
  const size_t used = RoundUp(bytes, kAlignment);
  Mapping m;
  m.mapped = RoundUp(used, granule);
  m.reserved = m.mapped + 2 * granule;
  PTXBENCH_CHECK_STATUS(kGuardedAllocation, api.reserve(&m.base, m.reserved, granule, 0, 0),
                        "cuMemAddressReserve");
  if (CUresult r = api.create(&m.handle, m.mapped, &prop, 0); r != CUDA_SUCCESS) {
    api.address_free(m.base, m.reserved);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) PTXBENCH_CUDA_CHECK(cudaErrorMemoryAllocation);
    PTXBENCH_CHECK_STATUS(kGuardedAllocation, r, "cuMemCreate");
  }
  CUresult r = api.map(m.base + granule, m.mapped, 0, m.handle, 0);
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  if (r == CUDA_SUCCESS) r = api.set_access(m.base + granule, m.mapped, &access, 1);
  if (r != CUDA_SUCCESS) {
    api.unmap(m.base + granule, m.mapped);
    api.release(m.handle);
    api.address_free(m.base, m.reserved);
    PTXBENCH_CHECK_STATUS(kGuardedAllocation, r, "cuMemMap/cuMemSetAccess");
  }
  const size_t slack = edge == GuardedEdge::kEnd ? m.mapped - used : 0;
  void* p = reinterpret_cast<void*>(m.base + granule + slack);
  std::lock_guard lock(g_mutex);
  g_mappings[p] = m;
  return p;
}

void* DeviceAlloc(size_t bytes, GuardedEdge edge) {
  if (g_guard_pages && bytes > 0) return GuardedAlloc(bytes, edge);
  void* p = nullptr;
  PTXBENCH_CUDA_CHECK(cudaMalloc(&p, bytes));
  return p;
}

void DeviceFree(void* p) {
  Mapping m;
  {
    std::lock_guard lock(g_mutex);
    auto it = g_mappings.find(p);
    if (it == g_mappings.end()) {
      cudaFree(p);
      return;
    }
    m = it->second;
    g_mappings.erase(it);
  }
  // Errors are ignored as cudaFree's were: a context the candidate broke cannot free anything.
  const VmmApi& api = Vmm();
  size_t granule = (m.reserved - m.mapped) / 2;
  api.unmap(m.base + granule, m.mapped);
  api.release(m.handle);
  api.address_free(m.base, m.reserved);
}

}  // namespace

void SetGuardPages(bool on) { g_guard_pages = on; }

Buffers::~Buffers() {
  for (auto& t : tensors)
    if (t.data) DeviceFree(t.data);
}

size_t Buffers::Bytes() const {
  size_t n = 0;
  for (const auto& t : tensors) n += t.spec.Bytes();
  return n;
}

namespace {
void AllocateRole(const Family& family, const Axes& axes, Buffers* b, bool inputs, bool outputs,
                  GuardedEdge edge) {
  for (const auto& spec : family.Tensors(axes)) {
    DeviceTensor t{spec, nullptr};
    bool want = spec.role == TensorRole::kInput ? inputs : outputs;
    if (want) t.data = DeviceAlloc(spec.Bytes(), edge);
    b->tensors.push_back(t);
  }
}
}  // namespace

void Allocate(const Family& family, const Axes& axes, Buffers* b, GuardedEdge edge) {
  AllocateRole(family, axes, b, true, true, edge);
}

void AllocateInputs(const Family& family, const Axes& axes, Buffers* b) {
  AllocateRole(family, axes, b, true, false, GuardedEdge::kEnd);
}

void AllocateOutputs(const Family& family, const Axes& axes, Buffers* b) {
  AllocateRole(family, axes, b, false, true, GuardedEdge::kEnd);
}

std::vector<DeviceTensor> Combine(const Buffers& inputs, const Buffers& outputs) {
  std::vector<DeviceTensor> t = inputs.tensors;
  for (size_t i = 0; i < t.size() && i < outputs.tensors.size(); ++i)
    if (t[i].spec.role == TensorRole::kOutput) t[i] = outputs.tensors[i];
  return t;
}

void WriteBytes(const std::string& path, const void* data, size_t bytes) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (!f || std::fwrite(data, 1, bytes, f.get()) != bytes)
    throw std::runtime_error("cannot write " + path);
}

bool AwaitParentGo(ChannelWriter& out, const char* event) {
  // As long as the parent may wait for the GPU lock (its deadline for the child covers it).
  constexpr int kGoTimeoutMs = 4000 * 1000;
  out.Send({{"event", event}});
  const std::string answer = ReadControlLine(kControlFd, kGoTimeoutMs);
  if (answer == kGateGo) return true;
  out.Send({{"event", "error"},
            {"stage", "gpu_gate"},
            {"message", std::string("the parent did not let the child use the GPU after ") + event +
                            " (" + (answer.empty() ? "no answer" : answer) + ")"}});
  return false;
}

nlohmann::json DeviceInfo() {
  int device = 0, driver = 0, runtime = 0;
  PTXBENCH_CUDA_CHECK(cudaGetDevice(&device));
  cudaDeviceProp p{};
  PTXBENCH_CUDA_CHECK(cudaGetDeviceProperties(&p, device));
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  int clock_khz = 0, mem_clock_khz = 0;
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device);
  cudaDeviceGetAttribute(&mem_clock_khz, cudaDevAttrMemoryClockRate, device);
  char bus[32] = {};
  cudaDeviceGetPCIBusId(bus, sizeof bus, device);
  return {{"event", "device"},
          {"name", p.name},
          {"uuid", LowerHex(std::string_view(p.uuid.bytes, sizeof p.uuid.bytes))},
          {"compute_capability", std::to_string(p.major) + "." + std::to_string(p.minor)},
          {"sm_count", p.multiProcessorCount},
          {"l2_bytes", p.l2CacheSize},
          {"global_memory_bytes", p.totalGlobalMem},
          {"max_sm_clock_hz", double(clock_khz) * 1e3},
          {"max_memory_clock_hz", double(mem_clock_khz) * 1e3},
          {"pci_bus_id", bus},
          {"driver_version", driver},
          {"runtime_version", runtime}};
}

namespace {

// Opens an object the parent built and hashed, and hashes what it opened: the descriptor
// returned is what gets loaded (through /proc/self/fd), so the bytes checked are the bytes
// mapped, whatever is done to the path meanwhile. -1, after an object_mismatch message and an
// error at stage "harness" (the candidate did not do this: no verdict of its own), when the
// file is not a regular file or its hash is not `sha256`.
int OpenVerifiedObject(const std::string& path, const std::string& sha256, ChannelWriter& out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  std::string found;
  struct stat st;
  if (fd >= 0 && ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    Sha256 hasher;
    std::vector<char> buf(1 << 20);
    ssize_t n;
    while ((n = ::read(fd, buf.data(), buf.size())) > 0) hasher.Update(buf.data(), size_t(n));
    if (n == 0) found = hasher.FinishHex();
  }
  if (!found.empty() && found == sha256) return fd;
  if (fd >= 0) ::close(fd);
  out.Send({{"event", "object_mismatch"},
            {"path", path},
            {"expected_sha256", sha256},
            {"found_sha256", found}});
  out.Send({{"event", "error"},
            {"stage", "harness"},
            {"message", path + " is not the object the parent built (sha256 " +
                            (found.empty() ? std::string("unreadable") : found) + ", expected " +
                            sha256 + "): not loaded"}});
  return -1;
}

// Loads `path` by way of a verified descriptor, or by its name where the spec gave no hash
// (an unconfined child of a test). The descriptor stays open: the library never unloads, and
// its loader name (/proc/self/fd/N) must not come to mean another file.
// The first time code not the harness's is mapped, the child says so (kLoadingEvent): what it
// sent before is the harness's own word, what follows may be forged.
void MarkLoading(ChannelWriter& out, bool* marked) {
  if (*marked) return;
  out.Send({{"event", kLoadingEvent}});
  *marked = true;
}

std::optional<DynamicLibrary> OpenObject(const std::string& path, const std::string& sha256,
                                         ChannelWriter& out, bool* refused, std::string* why,
                                         bool* marked) {
  if (sha256.empty()) {
    MarkLoading(out, marked);
    return DynamicLibrary::Open(path, why);
  }
  int fd = OpenVerifiedObject(path, sha256, out);
  if (fd < 0) {
    *refused = true;
    return std::nullopt;
  }
  MarkLoading(out, marked);
  const std::string by_fd = "/proc/self/fd/" + std::to_string(fd);
  std::optional<DynamicLibrary> library = DynamicLibrary::Open(by_fd, why);
  // The loader names the descriptor; the reader wants the file.
  if (!library && why)
    for (size_t at = why->find(by_fd); at != std::string::npos; at = why->find(by_fd, at))
      why->replace(at, by_fd.size(), path), at += path.size();
  return library;
}

}  // namespace

CandidateEntry LoadCandidateRun(const nlohmann::json& spec, ChannelWriter& out) {
  const std::string shared_object = spec.at("shared_object");
  CandidateEntry entry;
  const std::string abi_name = spec.value("abi", std::string("native"));
  if (auto abi = ParseCandidateAbi(abi_name)) {
    entry.abi = *abi;
  } else {
    out.Send({{"event", "error"}, {"stage", "load"}, {"message", "unknown ABI " + abi_name}});
    return entry;
  }
  // The last moment the harness alone owns this process: lock it down before the candidate's
  // constructors run. Landlock, the namespaces and the user were set before exec; what a
  // process can only do to itself comes here.
  if (spec.contains("confine")) {
    // Not dumpable: no process of the same user may read or trace this one's memory, and its
    // /proc entries belong to root (the filter below keeps it so).
    ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    // Nothing in /proc writable from here on (/proc/self/mem would write over the harness's
    // code and tables whatever their protection): files only in the child's folder and /dev
    // (whose devices the first Landlock layer lists one by one).
    std::string proc_why;
    bool proc_closed = RestrictWritesTo({spec.value("out_dir", std::string()), "/dev"}, &proc_why);
    SeccompProfile profile;
    profile.allow_inet_sockets = spec["confine"].value("allow_inet", false);
    std::string why;
    bool seccomp = spec["confine"].value("seccomp", true) && ApplySeccomp(profile, &why);
    nlohmann::json c = SelfConfinement();
    c["event"] = "confinement";
    c["seccomp"] = seccomp;
    if (!why.empty()) c["seccomp_why"] = why;
    c["proc_writes"] = proc_closed ? "refused" : "allowed: " + proc_why;
    out.Send(c);
  }
  // Objects are hashed when the parent makes them and verified here, before any of their code
  // runs. A confined child loads nothing unverified: no hash in its spec is a refusal.
  const std::string sha256 = spec.value("shared_object_sha256", std::string());
  if (sha256.empty() && spec.contains("confine")) {
    out.Send({{"event", "error"},
              {"stage", "harness"},
              {"message", "the spec gives no shared_object_sha256: not loaded"}});
    return entry;
  }
  // The TVM-FFI runtime beside a tvm-ffi candidate, verified and loaded first: the candidate's
  // dependency on it (by its soname) is then this copy.
  bool refused = false, marked = false;
  std::string why;
  for (const auto& pre : spec.value("preload", nlohmann::json::array())) {
    const std::string pre_sha256 = pre.value("sha256", std::string());
    if (pre_sha256.empty() && spec.contains("confine")) {
      out.Send(
          {{"event", "error"},
           {"stage", "harness"},
           {"message", "the spec gives no sha256 for " + pre.value("path", "") + ": not loaded"}});
      return entry;
    }
    std::optional<DynamicLibrary> runtime =
        OpenObject(pre.at("path"), pre_sha256, out, &refused, &why, &marked);
    if (refused) return entry;
    if (!runtime) {
      out.Send({{"event", "error"}, {"stage", "load"}, {"message", why}});
      return entry;
    }
  }
  // The handle is never closed: unloading a library whose kernels the runtime may still
  // reference is a crash we would wrongly blame on the candidate.
  std::optional<DynamicLibrary> library =
      OpenObject(shared_object, sha256, out, &refused, &why, &marked);
  if (refused) return entry;
  if (!library) {
    out.Send({{"event", "error"}, {"stage", "load"}, {"message", why}});
    return entry;
  }
  const std::string symbol = EntrySymbol(entry.abi);
  void* run = library->Address(symbol.c_str());
  if (!run) {
    out.Send({{"event", "error"},
              {"stage", "load"},
              {"message", "the shared object has no symbol `" + symbol + "`"}});
    return entry;
  }
  if (entry.abi == CandidateAbi::kTvmFfi) {
    // A symbol lookup on the candidate's handle searches it and then its dependencies: the
    // libtvm_ffi.so it was loaded with, whose environment stream its TVMFFIEnvGetStream reads.
    SymbolBinder binder(*library);
    binder.Require(entry.env_set_stream, "TVMFFIEnvSetStream");
    binder.Require(entry.error_move_from_raised, "TVMFFIErrorMoveFromRaised");
    binder.Require(entry.object_dec_ref, "TVMFFIObjectDecRef");
    if (!binder.missing().empty()) {
      out.Send({{"event", "error"},
                {"stage", "load"},
                {"message", "the TVM-FFI runtime the candidate loaded lacks " + binder.missing()}});
      return CandidateEntry{};
    }
  }
  entry.run = run;
  return entry;
}

std::vector<uint64_t> InputChecksums(const Buffers& b, Stream stream) {
  std::vector<uint64_t> sums;
  for (const auto& t : b.tensors)
    if (t.spec.role == TensorRole::kInput)
      sums.push_back(DeviceChecksum(t.data, t.spec.Bytes(), stream));
  return sums;
}

nlohmann::json WriteOutputs(const Buffers& b, const std::string& out_dir, const std::string& prefix,
                            Stream stream) {
  nlohmann::json outputs = nlohmann::json::array();
  std::vector<char> host;
  for (const auto& t : b.tensors) {
    if (t.spec.role != TensorRole::kOutput) continue;
    host.resize(t.spec.Bytes());
    PTXBENCH_CUDA_CHECK(
        cudaMemcpyAsync(host.data(), t.data, host.size(), cudaMemcpyDeviceToHost, stream));
    PTXBENCH_CUDA_CHECK(cudaStreamSynchronize(stream));
    std::string file = out_dir + "/" + prefix + "_" + t.spec.name + ".out";
    WriteBytes(file, host.data(), host.size());
    outputs.push_back({{"name", t.spec.name}, {"file", file}, {"elements", t.spec.Elements()}});
  }
  return outputs;
}

}  // namespace ptxbench
