#include "measure/loaded_objects.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace ptxbench {
namespace {

// Recorded from a CUDA process on Linux x86-64 (addresses and inodes kept, a
// few lines added for the unusual cases): the executable, libraries, anonymous
// mappings, pseudo paths, a file unlinked while mapped, a path with spaces and
// the driver's device files.
constexpr char kMaps[] =
    "55d4c8a00000-55d4c8a21000 r--p 00000000 103:02 3934121                   "
    "/work/main/build/ptxbench\n"
    "55d4c8a21000-55d4c8b9f000 r-xp 00021000 103:02 3934121                   "
    "/work/main/build/ptxbench\n"
    "55d4ca1e4000-55d4ca5e9000 rw-p 00000000 00:00 0                          [heap]\n"
    "7f2a10000000-7f2a10021000 rw-p 00000000 00:00 0 \n"
    "7f2a14000000-7f2a14200000 ---p 00000000 00:00 0\n"
    "7f2a18a00000-7f2a18c00000 rw-s 00000000 00:05 1033                       /dev/nvidiactl\n"
    "7f2a1c000000-7f2a1c600000 rw-s 00000000 00:05 1038                       /dev/nvidia0\n"
    "7f2a20e00000-7f2a2b4c5000 r-xp 00000000 103:02 2621512                   "
    "/usr/local/cuda-13.0/lib/libcublasLt.so.13.1.0.3\n"
    "7f2a2b600000-7f2a2b6a4000 r--p 00000000 103:02 2490391                   "
    "/usr/lib/x86_64-linux-gnu/libcuda.so.580.95.05\n"
    "7f2a2c000000-7f2a2c0a0000 r-xp 00000000 103:02 2621490                   "
    "/usr/local/cuda-13.0/lib/libcudart.so.13.0.96\n"
    "7f2a2d000000-7f2a2d010000 r-xp 00000000 00:2f 41                         "
    "/dev/shm/ptxbench-a1b2c3/candidate.so (deleted)\n"
    "7f2a2e000000-7f2a2e004000 r-xp 00000000 103:02 7340040                   "
    "/home/user/My Kernels/lib gemm.so\n"
    "7f2a2f000000-7f2a2f001000 rw-s 00000000 00:01 5120                       /memfd:cupti "
    "(deleted)\n"
    "7f2a30028000-7f2a301bd000 r-xp 00028000 103:02 2490412                   "
    "/usr/lib/x86_64-linux-gnu/libc.so.6\n"
    "7f2a303d0000-7f2a303d2000 r--p 00000000 00:00 0                          [vvar]\n"
    "7f2a303d2000-7f2a303d4000 r-xp 00000000 00:00 0                          [vdso]\n"
    "7f2a303d4000-7f2a303d5000 r--p 00000000 103:02 2490380                   "
    "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2\n"
    "7ffc5a1b3000-7ffc5a1d4000 rw-p 00000000 00:00 0                          [stack]\n"
    "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]\n";

TEST(ParseProcMaps, KeepsFileBackedMappingsOnly) {
  std::set<std::string> expected = {
      "/work/main/build/ptxbench",
      "/dev/nvidiactl",
      "/dev/nvidia0",
      "/usr/local/cuda-13.0/lib/libcublasLt.so.13.1.0.3",
      "/usr/lib/x86_64-linux-gnu/libcuda.so.580.95.05",
      "/usr/local/cuda-13.0/lib/libcudart.so.13.0.96",
      "/dev/shm/ptxbench-a1b2c3/candidate.so",
      "/home/user/My Kernels/lib gemm.so",
      "/memfd:cupti",
      "/usr/lib/x86_64-linux-gnu/libc.so.6",
      "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",
  };
  EXPECT_EQ(ParseProcMaps(kMaps), expected);
}

TEST(ParseProcMaps, SkipsEmptyAndMalformedLines) {
  EXPECT_TRUE(ParseProcMaps("").empty());
  EXPECT_TRUE(ParseProcMaps("\n\n").empty());
  EXPECT_TRUE(ParseProcMaps("garbage /usr/lib/libx.so\n").empty());
  // A tab before the pathname and no newline at the end still parse.
  EXPECT_EQ(ParseProcMaps("7f00-7f01 r-xp 00000000 08:01 12\t/lib/liba.so"),
            std::set<std::string>{"/lib/liba.so"});
  // Only a trailing " (deleted)" is the kernel's marker.
  EXPECT_EQ(ParseProcMaps("7f00-7f01 r-xp 00000000 08:01 12 /tmp/a (deleted).so\n"),
            std::set<std::string>{"/tmp/a (deleted).so"});
}

TEST(LoadedObjects, SeesThisTestAndTheCLibrary) {
  std::set<std::string> objects = LoadedObjects();
  bool has_libc = false;
  for (const std::string& path : objects)
    if (path.find("/libc.so") != std::string::npos) has_libc = true;
  EXPECT_TRUE(has_libc);
  for (const std::string& path : objects) EXPECT_EQ(path[0], '/') << path;
}

TEST(IsVendorKernelLibrary, MatchesVendorBasenames) {
  for (const char* path : {
           "/usr/local/cuda/lib64/libcublasLt.so.13",
           "libcublasLt.so.13",
           "/usr/local/cuda/lib64/libcublas.so.13.1.0.3",
           "/usr/lib/x86_64-linux-gnu/libcudnn_graph.so.9",
           "/usr/lib/x86_64-linux-gnu/libcudnn.so.9",
           "/opt/cuda/lib64/libcufftw.so.12",
           "/opt/cuda/lib64/libcurand.so.10",
           "/opt/cuda/lib64/libcusolverMg.so.12",
           "/opt/cuda/lib64/libcusparseLt.so.0",
           "/opt/cuda/lib64/libnppial.so.13",
           "/opt/cuda/lib64/libnvblas.so.13",
           "/opt/tensorrt/lib/libnvinfer_plugin.so.10",
           "/opt/cutensor/lib/libcutensor.so.2",
           "/opt/cutlass/lib/libcutlass.so",
           "/opt/fi/libflashinfer.so",
           "/opt/magma/lib/libmagma.so",
           "/venv/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so",
           "/venv/lib/python3.12/site-packages/torch/lib/libc10_cuda.so",
       })
    EXPECT_TRUE(IsVendorKernelLibrary(path)) << path;
}

TEST(IsVendorKernelLibrary, AllowsRuntimeCompilersAndOtherNames) {
  for (const char* path : {
           "/usr/local/cuda/lib64/libcudart.so.13",
           "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
           "/usr/local/cuda/lib64/libnvJitLink.so.13",
           "/usr/local/cuda/lib64/libnvrtc.so.13",
           "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13",
           "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1",
           "/usr/lib/x86_64-linux-gnu/libc.so.6",
           // The directory does not count, only the file's name.
           "/opt/mycublas/libfoo.so",
           "/opt/libcublas/candidate.so",
           "/tmp/mylibcublas.so",
           "",
           "/",
       })
    EXPECT_FALSE(IsVendorKernelLibrary(path)) << path;
}

TEST(NewVendorLibraries, ReportsOnlyAddedVendorLibraries) {
  std::set<std::string> before = {"/usr/lib/libc.so.6", "/usr/local/cuda/lib64/libcudart.so.13",
                                  "/usr/local/cuda/lib64/libcublasLt.so.13"};
  std::set<std::string> after = before;
  after.insert("/tmp/candidate.so");
  after.insert("/usr/lib/libcudnn_graph.so.9");
  after.insert("/usr/local/cuda/lib64/libcublas.so.13");
  after.insert("/usr/local/cuda/lib64/libnvJitLink.so.13");
  // libcublasLt was there before, so it is not the candidate's doing.
  EXPECT_EQ(NewVendorLibraries(before, after),
            (std::vector<std::string>{"/usr/lib/libcudnn_graph.so.9",
                                      "/usr/local/cuda/lib64/libcublas.so.13"}));
  EXPECT_TRUE(NewVendorLibraries(after, after).empty());
  EXPECT_TRUE(NewVendorLibraries(after, before).empty());
}

}  // namespace
}  // namespace ptxbench
