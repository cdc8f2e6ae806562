#include "common/sha256.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "common/dynamic_library.h"
#include "common/error.h"
#include "common/strings.h"

namespace ptxbench {
namespace {

// FIPS 180-4 section 4.2.2: the first 32 bits of the fractional parts of the
// cube roots of the first 64 primes.
constexpr uint32_t kRoundConstants[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

// FIPS 180-4 section 5.3.3: the first 32 bits of the fractional parts of the
// square roots of the first 8 primes.
constexpr std::array<uint32_t, 8> kInitialState = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

constexpr uint32_t RotR(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

// The six logical functions of FIPS 180-4 section 4.1.2.
constexpr uint32_t Ch(uint32_t x, uint32_t y, uint32_t z) { return (x & y) ^ (~x & z); }
constexpr uint32_t Maj(uint32_t x, uint32_t y, uint32_t z) { return (x & y) ^ (x & z) ^ (y & z); }
constexpr uint32_t BigSigma0(uint32_t x) { return RotR(x, 2) ^ RotR(x, 13) ^ RotR(x, 22); }
constexpr uint32_t BigSigma1(uint32_t x) { return RotR(x, 6) ^ RotR(x, 11) ^ RotR(x, 25); }
constexpr uint32_t SmallSigma0(uint32_t x) { return RotR(x, 7) ^ RotR(x, 18) ^ (x >> 3); }
constexpr uint32_t SmallSigma1(uint32_t x) { return RotR(x, 17) ^ RotR(x, 19) ^ (x >> 10); }

std::string ToHex(const std::array<uint8_t, 32>& digest) {
  return LowerHex(std::string_view(reinterpret_cast<const char*>(digest.data()), digest.size()));
}

// OpenSSL 3's EVP digest calls, resolved once from libcrypto.so.3 (never required).
struct LibCrypto {
  void* (*ctx_new)();
  void (*ctx_free)(void*);
  const void* (*sha256)();
  int (*init)(void*, const void*, void*);
  int (*update)(void*, const void*, size_t);
  int (*final)(void*, unsigned char*, unsigned int*);
};

const LibCrypto* Crypto() {
  static const LibCrypto* crypto = []() -> const LibCrypto* {
    std::optional<DynamicLibrary> lib = DynamicLibrary::Open("libcrypto.so.3");
    if (!lib) return nullptr;
    auto c = std::make_unique<LibCrypto>();
    SymbolBinder binder(*lib);
    binder.Require(c->ctx_new, "EVP_MD_CTX_new");
    binder.Require(c->ctx_free, "EVP_MD_CTX_free");
    binder.Require(c->sha256, "EVP_sha256");
    binder.Require(c->init, "EVP_DigestInit_ex");
    binder.Require(c->update, "EVP_DigestUpdate");
    binder.Require(c->final, "EVP_DigestFinal_ex");
    return binder.missing().empty() ? c.release() : nullptr;
  }();
  return crypto;
}

}  // namespace

Sha256::Sha256(bool use_libcrypto) {
  if (const LibCrypto* c = use_libcrypto ? Crypto() : nullptr) evp_ = c->ctx_new();
  Reset();
}

Sha256::~Sha256() {
  if (evp_) Crypto()->ctx_free(evp_);
}

const char* Sha256::Backend() { return Crypto() ? "libcrypto" : "built-in"; }

void Sha256::Reset() {
  state_ = kInitialState;
  buffered_ = 0;
  total_bytes_ = 0;
  if (evp_ && Crypto()->init(evp_, Crypto()->sha256(), nullptr) != 1) {
    Crypto()->ctx_free(evp_);  // a library that cannot start a digest: the code below can
    evp_ = nullptr;
  }
}

void Sha256::Compress(const uint8_t* block) {
  // Message schedule (section 6.2.2 step 1). Words are big-endian, so they are
  // assembled byte by byte rather than loaded, independent of host order.
  uint32_t w[64];
  for (int t = 0; t < 16; ++t) {
    w[t] = (uint32_t{block[4 * t]} << 24) | (uint32_t{block[4 * t + 1]} << 16) |
           (uint32_t{block[4 * t + 2]} << 8) | uint32_t{block[4 * t + 3]};
  }
  for (int t = 16; t < 64; ++t) {
    w[t] = SmallSigma1(w[t - 2]) + w[t - 7] + SmallSigma0(w[t - 15]) + w[t - 16];
  }

  uint32_t a = state_[0], b = state_[1], c = state_[2], d = state_[3];
  uint32_t e = state_[4], f = state_[5], g = state_[6], h = state_[7];
  for (int t = 0; t < 64; ++t) {
    uint32_t t1 = h + BigSigma1(e) + Ch(e, f, g) + kRoundConstants[t] + w[t];
    uint32_t t2 = BigSigma0(a) + Maj(a, b, c);
    h = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  state_[0] += a;
  state_[1] += b;
  state_[2] += c;
  state_[3] += d;
  state_[4] += e;
  state_[5] += f;
  state_[6] += g;
  state_[7] += h;
}

void Sha256::Update(const void* data, size_t n) {
  if (evp_) {
    if (Crypto()->update(evp_, data, n) != 1)
      throw InternalError("libcrypto: SHA-256 update failed");
    return;
  }
  const auto* p = static_cast<const uint8_t*>(data);
  total_bytes_ += n;
  // Top up a partially filled block first.
  if (buffered_ > 0) {
    size_t take = std::min(n, buffer_.size() - buffered_);
    std::memcpy(buffer_.data() + buffered_, p, take);
    buffered_ += take;
    p += take;
    n -= take;
    if (buffered_ < buffer_.size()) return;
    Compress(buffer_.data());
    buffered_ = 0;
  }
  // Whole blocks straight from the caller's memory, avoiding a copy.
  while (n >= 64) {
    Compress(p);
    p += 64;
    n -= 64;
  }
  if (n > 0) {
    std::memcpy(buffer_.data(), p, n);
    buffered_ = n;
  }
}

std::array<uint8_t, 32> Sha256::Finish() {
  if (evp_) {
    std::array<uint8_t, 32> digest;
    unsigned int n = 0;
    if (Crypto()->final(evp_, digest.data(), &n) != 1 || n != digest.size())
      throw InternalError("libcrypto: SHA-256 final failed");
    Reset();
    return digest;
  }
  // Padding (section 5.1.1): a 1 bit, zeros up to 56 mod 64 bytes, then the
  // message length in bits as a 64-bit big-endian integer.
  const uint64_t bit_length = total_bytes_ * 8;
  buffer_[buffered_++] = 0x80;
  if (buffered_ > 56) {
    std::memset(buffer_.data() + buffered_, 0, buffer_.size() - buffered_);
    Compress(buffer_.data());
    buffered_ = 0;
  }
  std::memset(buffer_.data() + buffered_, 0, 56 - buffered_);
  for (int i = 0; i < 8; ++i) buffer_[56 + i] = static_cast<uint8_t>(bit_length >> (56 - 8 * i));
  Compress(buffer_.data());

  std::array<uint8_t, 32> digest;
  for (int i = 0; i < 8; ++i) {
    digest[4 * i] = static_cast<uint8_t>(state_[i] >> 24);
    digest[4 * i + 1] = static_cast<uint8_t>(state_[i] >> 16);
    digest[4 * i + 2] = static_cast<uint8_t>(state_[i] >> 8);
    digest[4 * i + 3] = static_cast<uint8_t>(state_[i]);
  }
  Reset();
  return digest;
}

std::string Sha256::FinishHex() { return ToHex(Finish()); }

std::string Sha256Hex(std::string_view data) {
  Sha256 hasher;
  hasher.Update(data);
  return hasher.FinishHex();
}

std::string Sha256FileHex(const std::string& path) {
  struct FileCloser {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "rb"));
  if (!file) throw InputError("cannot open " + path + ": " + std::strerror(errno));

  Sha256 hasher;
  std::array<char, 1 << 16> chunk;
  while (true) {
    size_t n = std::fread(chunk.data(), 1, chunk.size(), file.get());
    hasher.Update(chunk.data(), n);
    if (n < chunk.size()) break;
  }
  // fread() cannot tell a short read at end of file from an I/O error (or
  // reading a directory, which opens fine on Linux); ferror() can.
  if (std::ferror(file.get())) throw InputError("cannot read " + path);
  return hasher.FinishHex();
}

}  // namespace ptxbench
