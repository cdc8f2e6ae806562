#include "common/sha256.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "common/error.h"

namespace ptxbench {
namespace {

// Known-answer vectors from the NIST examples for FIPS 180-4
// (SHA256.pdf and the "Secure Hashing" example values).
TEST(Sha256Test, EmptyString) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(Sha256Test, Abc) {
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256Test, TwoBlockMessage) {
  // 56 bytes: the padding no longer fits in the first block.
  EXPECT_EQ(Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256Test, OneMillionA) {
  EXPECT_EQ(Sha256Hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256Test, FinishReturnsRawDigestAndResets) {
  Sha256 hasher;
  hasher.Update("abc");
  std::array<uint8_t, 32> digest = hasher.Finish();
  EXPECT_EQ(digest[0], 0xba);
  EXPECT_EQ(digest[31], 0xad);
  // The hasher starts over after Finish(), so a second message is unaffected.
  hasher.Update("abc");
  EXPECT_EQ(hasher.FinishHex(), Sha256Hex("abc"));
  EXPECT_EQ(hasher.FinishHex(), Sha256Hex(""));
}

// Splitting the input anywhere must not change the digest; odd split points
// exercise partial-block buffering on both sides of the 64-byte boundary.
TEST(Sha256Test, IncrementalMatchesOneShot) {
  std::string message;
  for (int i = 0; i < 1000; ++i) message.push_back(static_cast<char>((i * 131 + 7) & 0xff));
  for (size_t length : {0, 1, 55, 56, 63, 64, 65, 119, 128, 1000}) {
    std::string_view data(message.data(), length);
    const std::string expected = Sha256Hex(data);
    for (size_t step : {1, 3, 7, 13, 63, 64, 65, 97}) {
      Sha256 hasher;
      for (size_t pos = 0; pos < data.size(); pos += step) {
        hasher.Update(data.substr(pos, step));
      }
      EXPECT_EQ(hasher.FinishHex(), expected) << "length " << length << " step " << step;
    }
    // An uneven split: one byte, then a chunk, then the rest.
    if (length >= 2) {
      Sha256 hasher;
      hasher.Update(data.data(), 1);
      hasher.Update(data.substr(1, length / 2));
      hasher.Update(data.substr(1 + length / 2));
      EXPECT_EQ(hasher.FinishHex(), expected) << "length " << length;
    }
  }
}

TEST(Sha256Test, FileMatchesString) {
  char dir_template[] = "/tmp/ptxbench_sha256_XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  const std::string path = dir + "/data.bin";

  // Larger than the 64 KiB read chunk so that several reads are needed, and
  // containing NUL bytes to prove the file is read in binary.
  std::string contents;
  for (int i = 0; i < 200000; ++i) contents.push_back(static_cast<char>(i % 251));
  {
    std::ofstream out(path, std::ios::binary);
    out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  }
  EXPECT_EQ(Sha256FileHex(path), Sha256Hex(contents));

  const std::string empty_path = dir + "/empty";
  { std::ofstream out(empty_path, std::ios::binary); }
  EXPECT_EQ(Sha256FileHex(empty_path), Sha256Hex(""));

  unlink(path.c_str());
  unlink(empty_path.c_str());
  rmdir(dir.c_str());
}

TEST(Sha256Test, UnreadableFileThrowsInputError) {
  try {
    Sha256FileHex("/nonexistent/ptxbench/file");
    FAIL() << "expected InputError";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInput);
  }
  // A directory opens but cannot be read.
  try {
    Sha256FileHex("/tmp");
    FAIL() << "expected InputError";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInput);
  }
}

// libcrypto (where the machine has it) and the portable code agree on every length around
// the block and padding boundaries, fed whole and in uneven pieces.
TEST(Sha256Test, LibcryptoAndBuiltInAgree) {
  std::string data(3 * 64 + 7 + (1 << 20), '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 131 + (i >> 9));
  for (size_t n : {size_t{0}, size_t{1}, size_t{55}, size_t{56}, size_t{63}, size_t{64},
                   size_t{65}, size_t{200}, data.size()}) {
    Sha256 library, builtin(/*use_libcrypto=*/false);
    for (size_t at = 0; at < n; at += 97) {
      library.Update(data.data() + at, std::min<size_t>(97, n - at));
      builtin.Update(data.data() + at, std::min<size_t>(97, n - at));
    }
    EXPECT_EQ(library.FinishHex(), builtin.FinishHex()) << n << " bytes, " << Sha256::Backend();
  }
  // Reused after Finish(): a fresh message.
  Sha256 again;
  again.Update("abc");
  again.FinishHex();
  again.Update("abc");
  EXPECT_EQ(again.FinishHex(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

}  // namespace
}  // namespace ptxbench
