/*
Adversarial control: include_fifo   (compile stage: a build that never ends)

Attack. The #include below climbs out of the build folder with ".." and names
/proc/self/fd/1: for the preprocessor that is its own standard output, the pipe through which
the evaluator collects nvcc's messages. Opened for reading it is a FIFO with no end: the
compiler waits for data that only the compiler itself could write, so the build hangs until
the harness's nvcc timeout (300 s in the old harness), holding a build slot all that time. (A
FIFO planted earlier by another candidate in /tmp or /dev/shm, reached the same way, does the
same.) It needs no absolute path, so a screen that only looks for a leading "/" misses it.
This file is a compile-stage attack: it is not meant to compile.

Old harness: COMPILE_ERROR after the 300 s build timeout.
Now: the screen rejects an #include whose path contains ".." -> REJECTED, naming line 19,
at once; nvcc is never started (and would be confined and time-limited).
*/
#include <cuda_runtime.h>

#include "../../../../../../../../../../../../../../proc/self/fd/1"

extern "C" int run(const void* A, const void* B, void* C, int M, int N, int K,
                   cudaStream_t stream) {
  return 1;
}
