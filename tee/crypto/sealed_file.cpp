#include "tee/crypto/sealed_file.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "tee/crypto/hkdf.h"
#include "tee/detail/nonce.h"
#include "tee/errors.h"
#include "tee/regular_file.h"

namespace tt::tee {

using detail::kNonceSize;
using detail::Nonce;

namespace {

constexpr std::string_view kMagic = "TTSEAL01";
constexpr std::size_t kAadSize = 32 + 8 + 1;
constexpr std::size_t kMinKey = 16;
// Keeps every size computation (L + 16 * chunks, with 1-byte chunks) far from 64-bit overflow.
constexpr std::uint64_t kMaxPlaintext = std::uint64_t{1} << 56;  // 64 PiB

[[noreturn]] void fail(const std::filesystem::path& p, const std::string& what) {
  throw IntegrityError(quoted_path(p, "sealed file") + ": " + what);
}

[[noreturn]] void io_fail(const std::filesystem::path& p, const std::string& what) {
  throw RunError(quoted_path(p, "sealed file") + ": " + what + ": " + std::strerror(errno));
}

bool known_cipher(std::uint8_t id) {
  return id >= 1 && id <= 3;
}

// File key and nonce base: HKDF(master, salt = file nonce). A fresh random file nonce per file makes
// both unique per file, which is what lets one master key seal many files.
struct FileKeys {
  SecretBytes key;
  Nonce nonce_base;
};
FileKeys derive_file_keys(const SecretBytes& master, const SealedHeader& h) {
  const SecretBytes prk = hkdf_extract(h.file_nonce, master.view());
  std::string key_info = "teetrain sealed-file v1 key ";
  key_info += cipher_name(h.cipher);
  FileKeys k{hkdf_expand(prk.view(), bytes_of(key_info), cipher_key_size(h.cipher)), {}};
  const SecretBytes base =
      hkdf_expand(prk.view(), bytes_of(std::string_view("teetrain sealed-file v1 nonce")), kNonceSize);
  std::copy_n(base.data(), kNonceSize, k.nonce_base.bytes.begin());
  return k;
}

Nonce chunk_nonce(const Nonce& base, std::uint64_t index) {
  Nonce n = base;
  std::array<std::uint8_t, 8> idx{};
  store_be64(idx.data(), index);
  for (std::size_t i = 0; i < 8; ++i) n.bytes[4 + i] ^= idx[i];
  return n;
}

}  // namespace

// Chunk i is sealed under nonce base XOR (0^32 || be64(i)): the nonces of a file are its own.
class detail::ChunkCipher {
 public:
  explicit ChunkCipher(Cipher cipher, FileKeys keys)
      : aead_(cipher, keys.key.view()), base_(keys.nonce_base) {}
  void seal(std::uint64_t index, ByteView aad, MutableByteView plain, Tag& tag) {
    aead_.seal(chunk_nonce(base_, index), aad, plain, plain, tag);
  }
  bool try_open(std::uint64_t index, ByteView aad, ByteView record, const Tag& tag, MutableByteView out) {
    return aead_.try_open(chunk_nonce(base_, index), aad, record, tag, out);
  }

 private:
  NonceAead aead_;
  Nonce base_;
};

namespace {

std::array<std::uint8_t, kAadSize> chunk_aad(const Sha256Digest& header_digest, std::uint64_t index,
                                             bool last) {
  std::array<std::uint8_t, kAadSize> aad{};
  std::copy(header_digest.begin(), header_digest.end(), aad.begin());
  store_be64(aad.data() + 32, index);
  aad[40] = last ? 1 : 0;
  return aad;
}

void check_options(const SealOptions& o) {
  if (o.chunk_size == 0 || o.chunk_size > kMaxSealChunkSize)
    throw std::invalid_argument("sealed file: chunk size must be 1 byte .. 64 MiB");
  if (o.metadata.size() > kMaxSealMetadata) throw std::invalid_argument("sealed file: metadata over 1 MiB");
}

void fsync_parent_dir(const std::filesystem::path& p) {
  std::filesystem::path dir = p.parent_path();
  if (dir.empty()) dir = ".";
  UniqueFd d(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  // Best effort: some filesystems refuse fsync on directories; the rename itself already happened.
  if (d) ::fsync(d.get());
}

}  // namespace

// ---- header ----

std::uint64_t SealedHeader::chunk_count() const {
  return plaintext_size == 0 ? 1 : (plaintext_size - 1) / chunk_size + 1;
}

std::uint64_t SealedHeader::chunk_plain_size(std::uint64_t i) const {
  const std::uint64_t n = chunk_count();
  if (i >= n) throw std::out_of_range("sealed file: chunk index out of range");
  return i + 1 < n ? chunk_size : plaintext_size - (n - 1) * chunk_size;
}

std::uint64_t SealedHeader::chunk_offset(std::uint64_t i) const {
  return header_size() + i * (std::uint64_t{chunk_size} + kTagSize);
}

std::uint64_t SealedHeader::file_size() const {
  return header_size() + plaintext_size + chunk_count() * kTagSize;
}

std::vector<std::uint8_t> SealedHeader::encode() const {
  std::vector<std::uint8_t> b(header_size());
  std::copy(kMagic.begin(), kMagic.end(), b.begin());
  b[8] = static_cast<std::uint8_t>(kVersion >> 8);
  b[9] = static_cast<std::uint8_t>(kVersion & 0xff);
  b[10] = static_cast<std::uint8_t>(cipher);
  b[11] = 0;
  store_be32(&b[12], chunk_size);
  store_be64(&b[16], plaintext_size);
  std::copy(key_fingerprint.begin(), key_fingerprint.end(), b.begin() + 24);
  std::copy(file_nonce.begin(), file_nonce.end(), b.begin() + 32);
  store_be32(&b[48], static_cast<std::uint32_t>(metadata.size()));
  std::copy(metadata.begin(), metadata.end(), b.begin() + kFixedSize);
  return b;
}

Sha256Digest SealedHeader::digest() const {
  std::vector<std::uint8_t> b = encode();
  std::fill_n(b.begin() + 16, 8, std::uint8_t{0});  // the length is bound by the last chunk instead
  return sha256(b);
}

namespace {

SealedHeader read_header_fd(int fd, const std::filesystem::path& path) {
  std::array<std::uint8_t, SealedHeader::kFixedSize> fixed{};
  const long long got = pread_full(fd, fixed, 0);
  if (got < 0) io_fail(path, "read failed");
  if (got < static_cast<long long>(fixed.size()) || !std::equal(kMagic.begin(), kMagic.end(), fixed.begin()))
    fail(path, "not a teetrain sealed file (bad magic or shorter than a header)");
  // Nothing here is authentic yet: the version, like every header field, is bound by the chunks'
  // associated data, and a reader can only open chunks of a version it knows. So an unknown version
  // cannot be told apart from an edited one before authentication, and is refused as an integrity
  // failure. (Only after a chunk opens can a file say authentically that it is of an older layout,
  // as a sealed token shard's own header does: that gets exit 2 and "re-seal it".)
  const unsigned version = (unsigned{fixed[8]} << 8) | fixed[9];
  if (version != SealedHeader::kVersion) fail(path, "unsupported format version " + std::to_string(version));
  if (!known_cipher(fixed[10])) fail(path, "unknown cipher id " + std::to_string(fixed[10]));
  if (fixed[11] != 0) fail(path, "unknown flags " + std::to_string(fixed[11]));
  SealedHeader h;
  h.cipher = static_cast<Cipher>(fixed[10]);
  h.chunk_size = load_be32(&fixed[12]);
  h.plaintext_size = load_be64(&fixed[16]);
  std::copy_n(fixed.begin() + 24, h.key_fingerprint.size(), h.key_fingerprint.begin());
  std::copy_n(fixed.begin() + 32, h.file_nonce.size(), h.file_nonce.begin());
  const std::uint32_t meta_len = load_be32(&fixed[48]);
  if (h.chunk_size == 0 || h.chunk_size > kMaxSealChunkSize)
    fail(path, "invalid chunk size " + std::to_string(h.chunk_size) + " (at most 64 MiB)");
  if (h.plaintext_size > kMaxPlaintext)
    fail(path, "invalid plaintext length " + std::to_string(h.plaintext_size));
  if (meta_len > kMaxSealMetadata) fail(path, "invalid metadata length " + std::to_string(meta_len));
  h.metadata.resize(meta_len);
  std::vector<std::uint8_t> meta(meta_len);
  const long long mgot = pread_full(fd, meta, SealedHeader::kFixedSize);
  if (mgot < 0) io_fail(path, "read failed");
  if (mgot != static_cast<long long>(meta_len)) fail(path, "truncated inside the header metadata");
  std::copy(meta.begin(), meta.end(), h.metadata.begin());
  return h;
}

// Note [Opening a user's file] (regular_file.h): a FIFO or device under a sealed file's name is
// refused (InputError) instead of blocking or reading without end.
UniqueFd open_for_reading(const std::filesystem::path& path) {
  return open_regular_file(path, "sealed file").fd;
}

}  // namespace

SealedHeader read_sealed_header(const std::filesystem::path& path) {
  const UniqueFd fd = open_for_reading(path);
  return read_header_fd(fd.get(), path);
}

// ---- writer ----

SealedFileWriter::SealedFileWriter(std::filesystem::path path, AtRestKey key, SealOptions options)
    : path_(std::move(path)) {
  check_options(options);
  if (key.secret().size() < kMinKey) throw std::invalid_argument("sealed file: key under 16 bytes");
  header_.cipher = options.cipher;
  header_.chunk_size = options.chunk_size;
  header_.metadata = std::move(options.metadata);
  header_.key_fingerprint = key_fingerprint(key.secret().view());
  random_bytes(header_.file_nonce);
  header_digest_ = header_.digest();
  chunks_ = std::make_unique<detail::ChunkCipher>(header_.cipher, derive_file_keys(key.secret(), header_));
  buffer_.resize(std::size_t{header_.chunk_size} + kTagSize);

  tmp_path_ = path_.string() + ".tmp." + to_hex(random_array<4>());
  fd_ = UniqueFd(::open(tmp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (!fd_) io_fail(tmp_path_, "cannot create");
  const std::vector<std::uint8_t> head = header_.encode();  // length 0 until finish()
  if (!pwrite_full(fd_.get(), head, 0)) {
    const int err = errno;
    abandon();
    errno = err;
    io_fail(tmp_path_, "write failed");
  }
  write_offset_ = head.size();
}

SealedFileWriter::~SealedFileWriter() {
  if (!finished_) abandon();
}

void SealedFileWriter::abandon() noexcept {
  fd_.reset();
  if (!tmp_path_.empty()) ::unlink(tmp_path_.c_str());
  finished_ = true;  // nothing more may be written
}

void SealedFileWriter::write(ByteView data) {
  if (finished_) throw std::logic_error(quoted_path(path_, "sealed file") + ": write after finish");
  while (!data.empty()) {
    // A full buffer is sealed only once more data arrives: until then it might be the last chunk.
    if (buffered_ == header_.chunk_size) seal_buffered_chunk(false);
    const std::size_t n = std::min<std::size_t>(header_.chunk_size - buffered_, data.size());
    std::copy_n(data.begin(), n, buffer_.begin() + static_cast<std::ptrdiff_t>(buffered_));
    buffered_ += n;
    total_ += n;
    data = data.subspan(n);
  }
}

void SealedFileWriter::seal_buffered_chunk(bool last) {
  const auto aad = chunk_aad(header_digest_, next_chunk_, last);
  const MutableByteView plain(buffer_.data(), buffered_);
  Tag tag{};
  chunks_->seal(next_chunk_, aad, plain, tag);
  std::copy(tag.begin(), tag.end(), buffer_.begin() + static_cast<std::ptrdiff_t>(buffered_));
  const ByteView record(buffer_.data(), buffered_ + kTagSize);
  if (!pwrite_full(fd_.get(), record, write_offset_)) io_fail(tmp_path_, "write failed");
  write_offset_ += record.size();
  ++next_chunk_;
  buffered_ = 0;
}

void SealedFileWriter::finish() {
  if (finished_) throw std::logic_error(quoted_path(path_, "sealed file") + ": finish called twice");
  if (total_ > kMaxPlaintext) throw std::length_error(quoted_path(path_, "sealed file") + ": too large");
  seal_buffered_chunk(true);
  header_.plaintext_size = total_;
  std::array<std::uint8_t, 8> len{};
  store_be64(len.data(), total_);
  if (!pwrite_full(fd_.get(), len, 16)) io_fail(tmp_path_, "write failed");
  if (::fsync(fd_.get()) != 0) io_fail(tmp_path_, "fsync failed");
  if (!fd_.close()) io_fail(tmp_path_, "close failed");
  if (::rename(tmp_path_.c_str(), path_.c_str()) != 0) io_fail(path_, "rename from temporary file failed");
  finished_ = true;
  fsync_parent_dir(path_);
}

// ---- reader ----

SealedFileReader::SealedFileReader(std::filesystem::path path, AtRestKey key)
    : path_(std::move(path)), fd_(open_for_reading(path_)) {
  header_ = read_header_fd(fd_.get(), path_);
  // Fingerprint first: a wrong key gets a clear message instead of "chunk 0 failed to open".
  const auto fp = key_fingerprint(key.secret().view());
  if (!equal_ct(fp, header_.key_fingerprint))
    fail(path_, "key fingerprint mismatch (file sealed under key " + to_hex(header_.key_fingerprint) +
                    ", given key " + to_hex(fp) + ")");
  struct stat st {};
  if (::fstat(fd_.get(), &st) != 0) io_fail(path_, "stat failed");
  const auto actual = static_cast<std::uint64_t>(st.st_size);
  if (actual != header_.file_size())
    fail(path_, "size " + std::to_string(actual) + " bytes does not match the header's " +
                    std::to_string(header_.file_size()) + " (truncated, extended or length edited)");
  // A writer writes every byte, and ciphertext holds no block of zeros: bytes the header declares that
  // the disk does not hold are a forgery's, refused before a chunk of that size is allocated and read.
  if (const auto hole = first_hole(fd_.get(), actual))
    fail(path_, "the disk holds no bytes at offset " + std::to_string(*hole) + " of the " +
                    std::to_string(actual) +
                    " its header declares (a hole: the file was extended, not written)");
  header_digest_ = header_.digest();
  chunks_ = std::make_unique<detail::ChunkCipher>(header_.cipher, derive_file_keys(key.secret(), header_));
  scratch_.resize(
      static_cast<std::size_t>(std::min<std::uint64_t>(header_.chunk_size, header_.plaintext_size)) +
      kTagSize);
}

SealedFileReader::~SealedFileReader() = default;

std::size_t SealedFileReader::open_chunk(std::uint64_t index, MutableByteView out) {
  const std::uint64_t n = header_.chunk_count();
  if (index >= n)
    throw std::out_of_range(quoted_path(path_, "sealed file") + ": chunk " + std::to_string(index) +
                            " out of range");
  const auto plain = static_cast<std::size_t>(header_.chunk_plain_size(index));
  if (out.size() < plain)
    throw std::invalid_argument(quoted_path(path_, "sealed file") + ": output smaller than the chunk");
  const MutableByteView record(scratch_.data(), plain + kTagSize);
  const long long got = pread_full(fd_.get(), record, header_.chunk_offset(index));
  if (got < 0) io_fail(path_, "read failed");
  const std::string where = "chunk " + std::to_string(index) + " of " + std::to_string(n);
  if (got != static_cast<long long>(record.size())) fail(path_, where + " is truncated");
  Tag tag{};
  std::copy_n(record.begin() + static_cast<std::ptrdiff_t>(plain), kTagSize, tag.begin());
  const auto aad = chunk_aad(header_digest_, index, index + 1 == n);
  if (!chunks_->try_open(index, aad, record.first(plain), tag, out.first(plain)))
    fail(path_, where + " failed to open (tampered, reordered, truncated or wrong key)");
  return plain;
}

std::uint64_t SealedFileReader::authenticated_size() {
  if (!size_authenticated_) {
    open_into_scratch(header_.chunk_count() - 1);  // opens only as "last" with the size L implies
    size_authenticated_ = true;
  }
  return size();
}

std::size_t SealedFileReader::open_into_scratch(std::uint64_t index) {
  // In place: scratch_ holds ciphertext || tag; the plaintext replaces the ciphertext.
  return open_chunk(index, MutableByteView(scratch_));
}

std::size_t SealedFileReader::read_chunk(std::uint64_t index, MutableByteView out) {
  return open_chunk(index, out);
}

void SealedFileReader::read(std::uint64_t offset, MutableByteView out) {
  if (offset > size() || out.size() > size() - offset)
    throw std::out_of_range(quoted_path(path_, "sealed file") + ": read past the end of the plaintext");
  const std::uint64_t c = header_.chunk_size;
  std::size_t done = 0;
  while (done < out.size()) {
    const std::uint64_t pos = offset + done;
    const std::uint64_t index = pos / c;
    const auto within = static_cast<std::size_t>(pos - index * c);
    const auto plain = static_cast<std::size_t>(header_.chunk_plain_size(index));
    const std::size_t take = std::min(plain - within, out.size() - done);
    if (within == 0 && take == plain) {
      open_chunk(index, out.subspan(done, take));  // whole chunk: straight into the caller's buffer
    } else {
      open_into_scratch(index);
      std::copy_n(scratch_.begin() + static_cast<std::ptrdiff_t>(within), take,
                  out.begin() + static_cast<std::ptrdiff_t>(done));
    }
    done += take;
  }
}

std::vector<std::uint8_t> SealedFileReader::read_all() {
  std::vector<std::uint8_t> out(static_cast<std::size_t>(size()));
  const std::uint64_t n = chunk_count();
  std::size_t done = 0;
  for (std::uint64_t i = 0; i < n; ++i) done += open_chunk(i, MutableByteView(out).subspan(done));
  return out;
}

void SealedFileReader::verify_all() {
  const std::uint64_t n = chunk_count();
  for (std::uint64_t i = 0; i < n; ++i) open_into_scratch(i);
}

void write_sealed_file(const std::filesystem::path& path, AtRestKey key, ByteView data, SealOptions options) {
  SealedFileWriter w(path, key, std::move(options));
  w.write(data);
  w.finish();
}

std::vector<std::uint8_t> read_sealed_file(const std::filesystem::path& path, AtRestKey key) {
  SealedFileReader r(path, key);
  return r.read_all();
}

}  // namespace tt::tee
