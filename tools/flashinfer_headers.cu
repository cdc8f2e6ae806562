// The FlashInfer headers the harness's generated attention baseline includes
// (src/measure/flashinfer_attention.cc, FlashInferIncludes(); a test keeps the two lists equal).
// scripts/setup.sh preprocesses this file (nvcc -M) against the flashinfer-python wheel's
// folders and installs only the headers it pulls in, keeping each .tools/flashinfer-<version>
// small.
#include <flashinfer/attention/hopper/attention_updater.cuh>
#include <flashinfer/attention/hopper/variant_helper.cuh>
#include <flashinfer/attention/hopper/variants.cuh>
#include <flashinfer/attention/mask.cuh>
#include <flashinfer/attention/scheduler.cuh>
#include <flashinfer/cutlass_utils.cuh>
#include <flashinfer/layout.cuh>
#include <flashinfer/math.cuh>
#include <flashinfer/attention/hopper/prefill_sm90.cuh>
