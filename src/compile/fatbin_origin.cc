#include "compile/fatbin_origin.h"

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "common/error.h"
#include "compile/elf.h"

namespace ptxbench {
namespace {

// A fatbin container starts with a 16-byte header: magic, version, header size, and the size
// of what follows the header (the CUDA toolkit's fatbinary layout, little-endian).
constexpr uint32_t kFatbinMagic = 0xBA55ED50u;
constexpr size_t kFatbinHeaderBytes = 16;
// A wrapper in .nvFatBinSegment: magic, version, the fatbin's address, a spare pointer.
constexpr size_t kWrapperBytes = 24;

uint64_t LittleEndian(const std::string& bytes, size_t at, size_t width) {
  uint64_t value = 0;
  for (size_t i = 0; i < width; ++i)
    value |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[at + i])) << (8 * i);
  return value;
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

std::string FatbinOriginProblem(const std::string& object,
                                const std::vector<std::string>& kept_fatbins) {
  // One read of the object: every section name, and the two sections nvcc's device code uses.
  const ElfSections elf = ReadElfSections(object, {".nv_fatbin", ".nvFatBinSegment"});
  for (const std::string& name : elf.names) {
    if (Lower(name).find("fatbin") != std::string::npos && name != ".nv_fatbin" &&
        name != ".nvFatBinSegment")
      return "the object has a section " + name + " that nvcc does not make";
  }
  const std::string* fatbin = elf.Bytes(".nv_fatbin");
  if (fatbin == nullptr) {
    // No device code at all: honest only when nvcc made none either.
    for (const std::string& kept : kept_fatbins)
      if (!kept.empty()) return "the object has no .nv_fatbin, but nvcc made device code";
    return "";
  }
  // nvcc's wrapper table (what the runtime registers) holds one 24-byte wrapper for the
  // translation unit (68 of 68 controls); an entry of the source's own could point a reader at
  // device code outside .nv_fatbin.
  if (const std::string* wrappers = elf.Bytes(".nvFatBinSegment");
      wrappers != nullptr && wrappers->size() != kWrapperBytes)
    return "the object's .nvFatBinSegment is " + std::to_string(wrappers->size()) +
           " bytes, not the one " + std::to_string(kWrapperBytes) + "-byte wrapper nvcc makes";
  const std::string& section = *fatbin;
  std::vector<bool> used(kept_fatbins.size(), false);
  size_t at = 0;
  while (at < section.size()) {
    if (section[at] == '\0') {  // alignment between containers
      ++at;
      continue;
    }
    if (section.size() - at < kFatbinHeaderBytes || LittleEndian(section, at, 4) != kFatbinMagic)
      return "bytes at " + Hex(at) + " of .nv_fatbin are not a fatbin nvcc made";
    const uint64_t header = LittleEndian(section, at + 6, 2);
    const uint64_t body = LittleEndian(section, at + 8, 8);
    if (header < kFatbinHeaderBytes || body > section.size() - at - header)
      return "the fatbin at " + Hex(at) + " of .nv_fatbin runs past the section";
    const size_t length = static_cast<size_t>(header + body);
    bool matched = false;
    for (size_t k = 0; k < kept_fatbins.size() && !matched; ++k) {
      if (used[k] || kept_fatbins[k].size() != length) continue;
      if (std::memcmp(section.data() + at, kept_fatbins[k].data(), length) != 0) continue;
      used[k] = matched = true;
    }
    if (!matched)
      return "the fatbin at " + Hex(at) + " of .nv_fatbin (" + std::to_string(length) +
             " bytes) is not one nvcc made for this source";
    at += length;
  }
  for (size_t k = 0; k < kept_fatbins.size(); ++k)
    if (!used[k] && !kept_fatbins[k].empty())
      return "a fatbin nvcc made for this source is missing from .nv_fatbin";
  return "";
}

}  // namespace ptxbench
