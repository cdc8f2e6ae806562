// Whether the device code inside a built object is nvcc's own. The build keeps the fatbins nvcc
// made for the source (the translation unit's and the device link's); the object's .nv_fatbin
// must be exactly those, one after another. Bytes a candidate places there itself (a section
// attribute or an assembler directive, spelled so that no screen can see it) would be read by
// the disassembler as device code of the candidate's: a vendor cubin among "its functions", or a
// header that breaks the disassembler. The CUDA runtime registers nvcc's fatbin and ignores the
// rest, so only this comparison can tell.
#pragma once

#include <string>
#include <vector>

namespace ptxbench {

// "" when the .nv_fatbin section of `object` is made only of the fatbin containers in
// `kept_fatbins` (the files' contents), each of them once, with only zero bytes between them
// (alignment), nvcc's wrapper table (.nvFatBinSegment) holds its one wrapper, and no other
// section is named like a fatbin. Otherwise a line that says what differs. Throws Error (kInput)
// when the object is not a readable ELF file.
std::string FatbinOriginProblem(const std::string& object,
                                const std::vector<std::string>& kept_fatbins);

}  // namespace ptxbench
