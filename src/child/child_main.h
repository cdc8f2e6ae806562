// The entry point of child processes: `ptxbench __child SPEC.json`.
//
// Roles (each spec typed and parsed strictly in run/protocol.h):
//   probe       reports the device only: the parent's candidate-free evidence of the GPU's health
//   load_check  loads a candidate's object and its runtime in the confinement, runs nothing
//   reference   makes the inputs for each seed, runs the family's trusted reference, writes
//               the expected outputs (fp32) to files and reports the inputs' checksums
//   candidate   loads the candidate's shared object, makes the same inputs, pre-fills the
//               outputs with poison, calls `run` on a stream it created, synchronizes,
//               checksums the inputs before and after, writes the outputs to files (also the
//               memory-checked and the profiled calls)
//   timing      the timed calls, a baseline's or a candidate's (child/timing_child.h)
//
// The expected outputs never exist in a candidate process. Every message goes to the channel
// (run/channel.h); the exit code is 0 whenever the child could report what happened.
#pragma once

namespace ptxbench {

int ChildMain(int argc, char** argv);

}  // namespace ptxbench
