// A child that takes the GPU lock when it needs the GPU, not from its start (issue 37). The
// caller used to hold the lock for a child's whole life: process start, confinement, dynamic
// loading, and a wrapping tool's own start (Nsight Compute's takes seconds) all kept other
// evaluations' timed windows waiting. A gated child (child/child_main.cc) asks at its first
// CUDA call (gpu_wanted: the GPU shared) and, for the candidate's timed child, once its
// context and timed buffers are set up and before the candidate is loaded (candidate_ready:
// alone; the kept outputs and witness inputs, GBs, are allocated after that); the parent
// answers on the control descriptor once it holds the lock in that mode.
//
// Only harness code asks: a request that arrives after the child's "loading" marker is the
// candidate's and is not honoured, nor is a second request of a kind. A child that never asks
// never holds the lock and has done nothing on the GPU (its first CUDA call waits for "go").
// The parent does not rely on the timed child asking: one whose "loading" marker arrives
// while the GPU is not held alone is marked, and its timings are void (the first gate lost
// the request on its way and timed candidates side by side). The caller releases the lock
// when the child has ended, as before.
#pragma once

#include <memory>

#include "evaluate/gpu_access.h"
#include "run/children.h"

namespace ptxbench {

struct GpuGateState {
  bool refused = false;  // a hold asked for was not granted: the child was told to stop
  bool shared_asked = false, alone_asked = false;
  bool candidate_loading = false;  // past the "loading" marker: no further request is honoured
  // For a child that must load alone: its "loading" marker came while the GPU was not held
  // alone (it never asked, or asked too late). Its timings are void (fail closed).
  bool loaded_without_alone = false;
};

// Makes `child` gated on `gpu`: sets the spec's gate key, keeps the lock's wait out of the
// child's deadline, and answers its requests (the child's own handler, if any, sees every
// other message). With `alone_before_load` the candidate_ready request takes the GPU alone.
// True only with PTXBENCH_GPU_GATE=on. Off (the default), each child holds the GPU from its
// start, the way verified on the GPU (docs/gpu-runs/2026-12-07-session7.md); the gate's fix
// (the timed child's request for the GPU alone now reaches it, and the parent fails closed
// without it) has not yet run there, so it is not the default.
bool GpuGateEnabled();

std::shared_ptr<GpuGateState> GateChildOnGpu(ChildRequest* child, GpuAccess* gpu,
                                             bool alone_before_load = false);

}  // namespace ptxbench
