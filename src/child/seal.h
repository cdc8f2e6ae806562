// Sealing the harness's own code and read-only data in a child before the candidate is mapped
// (mseal(2), Linux 6.10 and later): once sealed, no mprotect, mmap or munmap can make those
// pages writable or replace them, so a candidate cannot rewrite a GOT slot (full RELRO alone
// is undone by one mprotect) or patch the code that reads CUPTI's records. Where the kernel
// has no mseal the child says so and the out-of-process witness remains the defense.
#pragma once

#include <nlohmann/json.hpp>

namespace ptxbench {

// Seals the RELRO range and every non-writable loaded segment of the executable and of the
// libraries the timing depends on (CUPTI, the CUDA runtime). Returns {"event": "sealed",
// "state": "sealed"|"unavailable"|"partial", "ranges": n, "bytes": n, "errors": [...]}.
nlohmann::json SealHarnessMemory();

}  // namespace ptxbench
