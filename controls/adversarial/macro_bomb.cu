/*
Adversarial control: macro_bomb   (compile stage: exhausting the build machine without any
#include)

Attack. No file is named, so no #include rule can see it: 33 macro definitions double a
token run 32 times, and the array initializer below expands to 2^32 elements. The front end
(cudafe++, then cc1plus) builds the whole initializer in memory and grows without bound (about
1.4 GB of resident memory per minute here before a 3 GB address-space limit stopped it).
Only resource limits on the build stop this. This file is a compile-stage attack: it is not
meant to compile.

Old harness: COMPILE_ERROR only after the 300 s build timeout, having taken gigabytes from
the evaluator's machine meanwhile.
Now: nvcc runs under memory (address space) and CPU-time rlimits -> COMPILE_ERROR when a
limit is hit (e.g. "virtual memory exhausted" or a signal), in well under 300 s, with the
build's output bounded.
*/
#define ADV_B0 1,
#define ADV_B1 ADV_B0 ADV_B0
#define ADV_B2 ADV_B1 ADV_B1
#define ADV_B3 ADV_B2 ADV_B2
#define ADV_B4 ADV_B3 ADV_B3
#define ADV_B5 ADV_B4 ADV_B4
#define ADV_B6 ADV_B5 ADV_B5
#define ADV_B7 ADV_B6 ADV_B6
#define ADV_B8 ADV_B7 ADV_B7
#define ADV_B9 ADV_B8 ADV_B8
#define ADV_B10 ADV_B9 ADV_B9
#define ADV_B11 ADV_B10 ADV_B10
#define ADV_B12 ADV_B11 ADV_B11
#define ADV_B13 ADV_B12 ADV_B12
#define ADV_B14 ADV_B13 ADV_B13
#define ADV_B15 ADV_B14 ADV_B14
#define ADV_B16 ADV_B15 ADV_B15
#define ADV_B17 ADV_B16 ADV_B16
#define ADV_B18 ADV_B17 ADV_B17
#define ADV_B19 ADV_B18 ADV_B18
#define ADV_B20 ADV_B19 ADV_B19
#define ADV_B21 ADV_B20 ADV_B20
#define ADV_B22 ADV_B21 ADV_B21
#define ADV_B23 ADV_B22 ADV_B22
#define ADV_B24 ADV_B23 ADV_B23
#define ADV_B25 ADV_B24 ADV_B24
#define ADV_B26 ADV_B25 ADV_B25
#define ADV_B27 ADV_B26 ADV_B26
#define ADV_B28 ADV_B27 ADV_B27
#define ADV_B29 ADV_B28 ADV_B28
#define ADV_B30 ADV_B29 ADV_B29
#define ADV_B31 ADV_B30 ADV_B30
#define ADV_B32 ADV_B31 ADV_B31

extern "C" const unsigned char adv_bomb[] = {ADV_B32 1};

extern "C" int run(const void* A, const void* B, void* C, int M, int N, int K, void* stream) {
  return adv_bomb[0] == 1 ? 1 : 2;
}
