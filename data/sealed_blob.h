// SealedBlobReader: random-access plaintext byte ranges out of one sealed file (tee/crypto/sealed_file.h),
// for sealed datasets of any kind (token shards now, image files later).
//
// Only the chunks a range touches are opened. The most recently opened chunk is kept (decrypted)
// in a one-chunk cache, because consecutive requests usually hit the same chunk: a token window of
// T+1 tokens is far smaller than a 1 MiB chunk, and an unshuffled pass reads windows in order.
// Every chunk actually opened counts as one message opened (Counter::MessagesOpened / BytesOpened);
// time is not recorded here, the caller times the whole ingress step (Phase::Ingress).
//
// Not thread-safe (one reader per rank/thread, like SealedFileReader).
#pragma once
#include <cstdint>
#include <filesystem>
#include <limits>
#include <vector>

#include "core/profiler.h"
#include "tee/crypto/purpose_keys.h"
#include "tee/crypto/sealed_file.h"

namespace tt {

class SealedBlobReader {
 public:
  // Checks the header and the key fingerprint (IntegrityError "key fingerprint mismatch").
  // Throws InputError if `path` does not exist. `profiler` may be null; it must outlive the reader.
  SealedBlobReader(const std::filesystem::path& path, tee::AtRestKey key, Profiler* profiler = nullptr);

  const std::filesystem::path& path() const { return file_.path(); }
  const tee::SealedHeader& header() const { return file_.header(); }
  std::uint64_t size() const { return file_.size(); }  // plaintext bytes (as the clear header says)
  // The plaintext size, authenticated (SealedFileReader::authenticated_size): check sizes against this.
  std::uint64_t authenticated_size() { return file_.authenticated_size(); }

  // Copies plaintext [offset, offset + out.size()) into `out`. Throws IntegrityError naming
  // the file and chunk when a touched chunk fails to open, std::out_of_range past the end.
  void read(std::uint64_t offset, tee::MutableByteView out);

  std::uint64_t chunks_opened() const { return chunks_opened_; }

 private:
  static constexpr std::uint64_t kNoChunk = std::numeric_limits<std::uint64_t>::max();
  // Makes chunk `index` the cached chunk (opening it unless it already is).
  void load_chunk(std::uint64_t index);

  tee::SealedFileReader file_;
  Profiler* profiler_;
  std::vector<std::uint8_t> cache_;  // (chunk_size) plaintext of chunk cached_chunk_
  std::uint64_t cached_chunk_ = kNoChunk;
  std::uint64_t chunks_opened_ = 0;
};

}  // namespace tt
