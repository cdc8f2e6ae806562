/*
Adversarial control: include_dev_zero   (compile stage: exhausting the build machine)

Attack. #include "/dev/zero" hands the preprocessor an endless file of NUL bytes; cc1plus
keeps reading and buffering it (the old harness saw nvcc grow past 1 GB before its 300 s
timeout), starving everything else on the evaluator's machine for the duration.
This file is a compile-stage attack: it is not meant to compile.

Old harness: COMPILE_ERROR after minutes and gigabytes (or the machine's OOM killer first).
Now: the screen rejects an #include of an absolute path -> REJECTED, naming line 15, in
milliseconds; nvcc is never started (and would run under memory and time rlimits).
*/
#include <cuda_runtime.h>

#include "/dev/zero"

extern "C" int run(const void* A, const void* B, void* C, int M, int N, int K,
                   cudaStream_t stream) {
  return 1;
}
