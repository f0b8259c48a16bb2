#include "data/token_shard.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <system_error>

#include "base/error.h"
#include "tee/bytes.h"
#include "tee/digest.h"
#include "tee/regular_file.h"

namespace tt {
namespace fs = std::filesystem;

namespace {

// The format is little-endian; encode explicitly so a big-endian host reads the same files.
void put_i32(unsigned char* p, int32_t v) {
  const auto u = static_cast<uint32_t>(v);
  for (int i = 0; i < 4; ++i) p[i] = static_cast<unsigned char>(u >> (8 * i));
}

void swap_u16_if_big_endian(std::span<uint16_t> v) {
  if constexpr (std::endian::native == std::endian::big) {
    for (auto& x : v) x = static_cast<uint16_t>((x >> 8) | (x << 8));
  }
}

// Built by appending: GCC 12's -Wrestrict misfires on `"'" + p.string() + "'"` at -O3.
constexpr const char* kRemakeHint = "re-create it with `teetrain prepare-text` (or llm.c's dev/data scripts)";

}  // namespace

ShardHeaderFields read_shard_header(std::span<const uint8_t, kShardHeaderBytes> header) {
  const auto field = [&](std::size_t i) {
    return static_cast<int32_t>(tee::load_le(header.subspan(4 * i, 4)));
  };
  return {field(0), field(1), field(2), field(3)};
}

void write_token_shard(const fs::path& path, std::span<const uint16_t> tokens, int vocab) {
  if (vocab < 0 || vocab > 65536) {
    throw InputError("token shard " + tee::quoted_path(path) + ": vocabulary " + std::to_string(vocab) +
                     " does not fit uint16 tokens (0..65536)");
  }
  if (tokens.size() > static_cast<std::size_t>(std::numeric_limits<int32_t>::max())) {
    throw InputError(
        "token shard " + tee::quoted_path(path) + ": " + std::to_string(tokens.size()) +
        " tokens exceed the int32 count of the llm.c header; split the data into several shards");
  }
  if (vocab > 0) {
    const auto bad = std::find_if(tokens.begin(), tokens.end(), [vocab](uint16_t t) { return t >= vocab; });
    if (bad != tokens.end()) {
      throw InputError("token shard " + tee::quoted_path(path) + ": token " + std::to_string(*bad) +
                       " at position " + std::to_string(bad - tokens.begin()) +
                       " is outside the vocabulary of " + std::to_string(vocab));
    }
  }

  std::array<unsigned char, kShardHeaderBytes> header{};
  put_i32(&header[0], kShardMagic);
  put_i32(&header[4], kShardVersion);
  put_i32(&header[8], static_cast<int32_t>(tokens.size()));
  put_i32(&header[12], vocab);

  // Temporary name unique per process, so concurrent writers (e.g. one per rank) never share one.
  fs::path tmp = path;
  tmp += ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw RunError("cannot create " + tee::quoted_path(tmp) + ": " + std::strerror(errno));
    out.write(reinterpret_cast<const char*>(header.data()), static_cast<std::streamsize>(header.size()));
    if constexpr (std::endian::native == std::endian::little) {
      out.write(reinterpret_cast<const char*>(tokens.data()),
                static_cast<std::streamsize>(tokens.size() * sizeof(uint16_t)));
    } else {
      std::vector<uint16_t> le(tokens.begin(), tokens.end());
      swap_u16_if_big_endian(le);
      out.write(reinterpret_cast<const char*>(le.data()),
                static_cast<std::streamsize>(le.size() * sizeof(uint16_t)));
    }
    out.flush();
    if (!out) {
      std::error_code ignored;
      fs::remove(tmp, ignored);
      throw RunError("cannot write " + tee::quoted_path(tmp) + " (disk full?)");
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw RunError("cannot rename " + tee::quoted_path(tmp) + " to " + tee::quoted_path(path) + ": " +
                   ec.message());
  }
}

TokenShard read_token_shard(const fs::path& path, tee::Sha256* file_digest) {
  // Note [Opening a user's file] (tee/regular_file.h): a FIFO or device is refused, never read.
  tee::OpenAttempt opened = tee::try_open_regular(path);
  if (opened.error == ENOENT) {
    throw InputError("token shard " + tee::quoted_path(path) +
                     " not found; run `teetrain prepare-text` first");
  }
  if (!opened.ok())
    throw InputError("token shard " + tee::quoted_path(path) + ": " + opened.why() + "; pass a .bin shard");
  const tee::RegularFile file = std::move(opened.file);
  const std::uint64_t size = file.size;

  if (size < kShardHeaderBytes) {
    throw InputError("token shard " + tee::quoted_path(path) + " is truncated: " + std::to_string(size) +
                     " bytes, shorter than the 1024-byte header; " + kRemakeHint);
  }
  std::array<unsigned char, kShardHeaderBytes> header{};
  if (tee::pread_full(file.fd.get(), header, 0) != static_cast<long long>(header.size()))
    throw InputError("cannot read the header of token shard " + tee::quoted_path(path));

  const auto [magic, version, count, vocab] = read_shard_header(header);
  if (magic != kShardMagic) {
    throw InputError("token shard " + tee::quoted_path(path) + " has wrong magic " + std::to_string(magic) +
                     " (expected 20240520): not an llm.c/teetrain token file; " + kRemakeHint);
  }
  if (version != kShardVersion) {
    throw InputError("token shard " + tee::quoted_path(path) + " has unsupported version " +
                     std::to_string(version) + " (this build reads version 1, uint16 tokens); " +
                     kRemakeHint);
  }
  if (count < 0 || vocab < 0 || vocab > 65536) {
    throw InputError("token shard " + tee::quoted_path(path) + " has a corrupt header (count " +
                     std::to_string(count) + ", vocabulary " + std::to_string(vocab) + "); " + kRemakeHint);
  }
  const uint64_t expected = kShardHeaderBytes + 2 * static_cast<uint64_t>(count);
  if (size < expected) {
    throw InputError("token shard " + tee::quoted_path(path) + " is truncated: header says " +
                     std::to_string(count) + " tokens (" + std::to_string(expected) +
                     " bytes) but the file has " + std::to_string(size) + " bytes; " + kRemakeHint);
  }
  if (size > expected) {
    throw InputError("token shard " + tee::quoted_path(path) + " has " + std::to_string(size - expected) +
                     " bytes past the " + std::to_string(count) + " tokens its header declares; " +
                     kRemakeHint);
  }

  TokenShard shard;
  shard.path = path;
  shard.recorded_vocab = vocab;
  shard.tokens.resize(static_cast<std::size_t>(count));
  const tee::MutableByteView token_bytes(reinterpret_cast<std::uint8_t*>(shard.tokens.data()),
                                         2 * shard.tokens.size());
  if (tee::pread_full(file.fd.get(), token_bytes, kShardHeaderBytes) !=
      static_cast<long long>(token_bytes.size()))
    throw InputError("cannot read the tokens of token shard " + tee::quoted_path(path));
  if (file_digest != nullptr) file_digest->update(header).update(token_bytes);
  swap_u16_if_big_endian(shard.tokens);

  if (vocab > 0) {
    const auto& t = shard.tokens;
    const auto bad = std::find_if(t.begin(), t.end(), [vocab](uint16_t x) { return x >= vocab; });
    if (bad != t.end()) {
      throw InputError("token shard " + tee::quoted_path(path) + " holds token " + std::to_string(*bad) +
                       " at position " + std::to_string(bad - t.begin()) + ", outside its vocabulary of " +
                       std::to_string(vocab) + "; " + kRemakeHint);
    }
  }
  return shard;
}

}  // namespace tt
