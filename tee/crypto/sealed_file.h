// The sealed-file format (docs/design.md §7) for sealed datasets and checkpoints.
//
// Layout (all integers big-endian):
//
//   offset  size  field
//        0     8  magic "TTSEAL01"
//        8     2  format version (1)
//       10     1  cipher id (1 aes-256-gcm, 2 aes-128-gcm, 3 chacha20-poly1305)
//       11     1  flags (0; reserved)
//       12     4  chunk size C: plaintext bytes per chunk, 1 .. 2^26 (64 MiB; see kMaxSealChunkSize)
//       16     8  plaintext length L
//       24     8  key fingerprint: key_fingerprint(at-rest key) -- identifies the key, never the key
//       32    16  file nonce: random, fresh for every file written
//       48     4  metadata length M (<= 1 MiB)
//       52     M  metadata (opaque bytes, e.g. JSON {"kind":"tokens","name":"train_000"})
//   52 + M        chunks: N = max(1, ceil(L / C)) records of ciphertext || 16-byte tag; every chunk
//                 holds C plaintext bytes except the last, which holds L - (N-1)C (0 only if L = 0)
//
// Keys and nonces: the file key and a 12-byte nonce base are HKDF-SHA256 outputs from the at-rest key
// (a dataset, checkpoint or freshness key: purpose_keys.h) with the file nonce as salt, so one such key
// seals any number of files without two files ever sharing a (key, nonce) pair. Chunk i is sealed under nonce
// base XOR (0^32 || be64(i)): distinct for every chunk of a file.
//
// Associated data of chunk i: SHA-256(header with the length field zeroed) || be64(i) || last,
// where last is 1 for chunk N-1 and 0 otherwise. So: any header edit breaks every chunk; moving a
// chunk breaks it (index); dropping trailing chunks leaves no chunk marked last (truncation); and
// the length field -- zeroed in the digest because a streaming writer learns it only at the end --
// is still authenticated: a reader trusts L only if chunk N-1 opens as "last" with exactly the size
// L implies, which the tag binds. A reader also insists on the exact file size L implies, so
// appended bytes are refused, and, before it allocates a chunk, on a file without holes: every byte
// of that size stored (tee::first_hole), so that a forged header (C = L = 64 MiB) with the file extended
// sparsely to match costs no gigabyte of memory and reading: an IntegrityError at once.
//
// The header is readable without the key (read_sealed_header, for `inspect`), but nothing in it is
// trustworthy until a chunk has opened. All failures throw IntegrityError naming the file (and the
// chunk, for chunk failures).
#pragma once
#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tee/bytes.h"
#include "tee/crypto/aead.h"
#include "tee/crypto/purpose_keys.h"
#include "tee/digest.h"
#include "tee/secure_bytes.h"
#include "tee/unique_fd.h"

namespace tt::tee {

namespace detail {
class ChunkCipher;  // sealed_file.cpp: the file key's AEAD at chunk i's nonce
}

inline constexpr std::uint32_t kDefaultSealChunkSize = std::uint32_t{1} << 20;  // 1 MiB
// A reader allocates one chunk before it can tell whether the chunk is genuine, so the largest chunk
// is what a forged header (backed by real bytes on the disk) can make every reader allocate and
// decrypt in vain. 64 MiB bounds that; larger chunks buy nothing (AES-GCM runs at full speed long
// before, and shuffled reads want small chunks).
inline constexpr std::uint32_t kMaxSealChunkSize = std::uint32_t{1} << 26;
inline constexpr std::uint32_t kMaxSealMetadata = std::uint32_t{1} << 20;

struct SealedHeader {
  static constexpr std::size_t kFixedSize = 52;
  static constexpr std::uint16_t kVersion = 1;

  Cipher cipher = Cipher::Aes256Gcm;
  std::uint32_t chunk_size = kDefaultSealChunkSize;
  std::uint64_t plaintext_size = 0;
  std::array<std::uint8_t, 8> key_fingerprint{};
  std::array<std::uint8_t, 16> file_nonce{};
  std::string metadata;

  std::uint64_t header_size() const { return kFixedSize + metadata.size(); }
  std::uint64_t chunk_count() const;
  // Plaintext bytes in chunk i (< chunk_count()).
  std::uint64_t chunk_plain_size(std::uint64_t i) const;
  // Byte offset of chunk i's record in the file.
  std::uint64_t chunk_offset(std::uint64_t i) const;
  // The exact size a genuine file with this header has.
  std::uint64_t file_size() const;

  std::vector<std::uint8_t> encode() const;
  // The digest bound into every chunk's associated data (length field zeroed, see above).
  Sha256Digest digest() const;
};

// Reads and validates the clear header, without any key. `path` is used in error messages.
SealedHeader read_sealed_header(const std::filesystem::path& path);

struct SealOptions {
  Cipher cipher = Cipher::Aes256Gcm;
  std::uint32_t chunk_size = kDefaultSealChunkSize;
  std::string metadata;
};

// Streams plaintext into a sealed file. Data goes to "<path>.tmp.<random>"; finish() seals the
// last chunk, writes the length, fsyncs and renames onto `path` (then fsyncs the directory), so
// `path` is either the old file or the complete new one, never half of it. A writer destroyed
// without finish() deletes its temporary file. Not thread-safe.
class SealedFileWriter {
 public:
  // `key` must be at least 16 bytes; it is not retained (only the derived file key is).
  SealedFileWriter(std::filesystem::path path, AtRestKey key, SealOptions options = {});
  ~SealedFileWriter();
  SealedFileWriter(const SealedFileWriter&) = delete;
  SealedFileWriter& operator=(const SealedFileWriter&) = delete;

  void write(ByteView data);
  void finish();
  std::uint64_t bytes_written() const { return total_; }
  const SealedHeader& header() const { return header_; }

 private:
  void seal_buffered_chunk(bool last);
  void abandon() noexcept;

  std::filesystem::path path_;
  std::filesystem::path tmp_path_;
  SealedHeader header_;
  Sha256Digest header_digest_{};
  std::unique_ptr<detail::ChunkCipher> chunks_;  // the file key, and the chunks' nonces from it
  UniqueFd fd_;
  std::uint64_t write_offset_ = 0;
  std::vector<std::uint8_t> buffer_;  // one chunk of plaintext, then its ciphertext || tag
  std::size_t buffered_ = 0;
  std::uint64_t next_chunk_ = 0;
  std::uint64_t total_ = 0;
  bool finished_ = false;
};

// Random access to a sealed file. The constructor checks the header, the key fingerprint ("key
// fingerprint mismatch") and the file size; chunks are verified as they are read. Not thread-safe:
// use one reader per thread (each holds its own cipher contexts and scratch buffer).
class SealedFileReader {
 public:
  SealedFileReader(std::filesystem::path path, AtRestKey key);
  ~SealedFileReader();
  SealedFileReader(const SealedFileReader&) = delete;
  SealedFileReader& operator=(const SealedFileReader&) = delete;

  const SealedHeader& header() const { return header_; }
  const std::filesystem::path& path() const { return path_; }
  // The clear length field L: unauthenticated until the last chunk has opened (see the layout above).
  // Compare it with anything only after authenticated_size().
  std::uint64_t size() const { return header_.plaintext_size; }
  // L, authenticated: opens the last chunk (once), the only one that binds it; an edited length field
  // (with the file cut or padded to match) is an IntegrityError here, never a "wrong size" later.
  std::uint64_t authenticated_size();
  std::uint64_t chunk_count() const { return header_.chunk_count(); }

  // Decrypts chunk i into out (out.size() >= chunk_plain_size(i)); returns the bytes written.
  std::size_t read_chunk(std::uint64_t index, MutableByteView out);
  // Decrypts plaintext bytes [offset, offset + out.size()), opening only the chunks it touches.
  // Throws std::out_of_range if the range is past the end.
  void read(std::uint64_t offset, MutableByteView out);
  std::vector<std::uint8_t> read_all();
  // Opens every chunk (discarding the plaintext); throws on the first that fails.
  void verify_all();

 private:
  // Reads chunk i's record into scratch_ and opens it in place; returns its plaintext size.
  std::size_t open_into_scratch(std::uint64_t index);
  std::size_t open_chunk(std::uint64_t index, MutableByteView out);

  std::filesystem::path path_;
  SealedHeader header_;
  Sha256Digest header_digest_{};
  std::unique_ptr<detail::ChunkCipher> chunks_;  // the file key, and the chunks' nonces from it
  UniqueFd fd_;
  std::vector<std::uint8_t> scratch_;
  bool size_authenticated_ = false;
};

// Convenience: seal a whole buffer / read and verify a whole file.
void write_sealed_file(const std::filesystem::path& path, AtRestKey key, ByteView data,
                       SealOptions options = {});
std::vector<std::uint8_t> read_sealed_file(const std::filesystem::path& path, AtRestKey key);

}  // namespace tt::tee
