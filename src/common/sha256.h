// SHA-256 (FIPS 180-4). The harness fingerprints sources, binaries and data
// files with it so that records can say exactly which inputs produced them.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ptxbench {

// Incremental hasher: call Update() any number of times, then Finish() once.
// After Finish() the object is reset and can hash a new message.
// Large files (reference outputs, verified on every read: 0.7 GB per headline GEMM evaluation)
// go through OpenSSL's libcrypto when the machine has it (loaded at run time: no headers
// needed to build), ~7x faster than the portable code here, which is used otherwise. Both
// give the same digest.
class Sha256 {
 public:
  explicit Sha256(bool use_libcrypto = true);
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  // "libcrypto" or "built-in": which implementation hashes here.
  static const char* Backend();

  void Update(const void* data, size_t n);
  void Update(std::string_view s) { Update(s.data(), s.size()); }

  // Returns the 32-byte digest and resets the hasher.
  std::array<uint8_t, 32> Finish();
  // Same as Finish(), as 64 lowercase hex digits.
  std::string FinishHex();

 private:
  void Reset();
  void Compress(const uint8_t* block);

  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_;
  size_t buffered_ = 0;       // bytes waiting in buffer_ (always < 64)
  uint64_t total_bytes_ = 0;  // message length so far, for the final padding
  void* evp_ = nullptr;       // libcrypto's EVP_MD_CTX, when it is used
};

// Lowercase hex digest of `data`.
std::string Sha256Hex(std::string_view data);

// Lowercase hex digest of the file's contents, read in chunks so that large
// files are not loaded whole. Throws InputError if the file cannot be read.
std::string Sha256FileHex(const std::string& path);

}  // namespace ptxbench
