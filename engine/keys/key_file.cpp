#include "engine/keys/key_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "base/error.h"
#include "base/suggest.h"
#include "tee/bytes.h"
#include "tee/crypto/hkdf.h"
#include "tee/regular_file.h"
#include "tee/unique_fd.h"

namespace tt {
namespace fs = std::filesystem;

namespace {

// A file beside `path` whose name is one typo away from it ("ownr.key" -> "owner.key").
std::string similar_file(const fs::path& path) {
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_regular_file(ec)) names.push_back(it->path().filename().string());
  }
  const auto near = closest_match(path.filename().string(), names);
  return near ? " (did you mean " + (dir / *near).string() + "?)" : "";
}

}  // namespace

std::string missing_key_file(const fs::path& path, KeyUse use) {
  const std::string head = tee::quoted_path(path, "key file") + " not found" + similar_file(path) + "; ";
  const std::string keygen = "`teetrain keygen --out " + path.string() + "`";
  switch (use) {
    case KeyUse::SealNew:
      return head + "create one with " + keygen;
    case KeyUse::TrainSealed:
      return head +
             "sealed data and checkpoints open only under the key they were sealed with: pass the "
             "data owner's key file (the --key-file given to `teetrain seal-data`); a new key from " +
             keygen + " is only for sealing new data, it cannot open this";
    case KeyUse::OpenSealed:
      break;
  }
  return head +
         "a sealed file opens only under the key it was sealed with: pass the key file it was "
         "sealed with (its owner's --key-file); a new key from `teetrain keygen` cannot open it";
}

std::string create_key_file(const fs::path& path, bool force) {
  std::error_code ec;
  if (!force && fs::exists(path, ec)) {
    throw InputError(tee::quoted_path(path, "key file") +
                     " already exists; refusing to overwrite a key (data sealed under it would " +
                     "become unreadable). Pass --force to replace it");
  }
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ec))
    throw InputError(tee::quoted_path(path, "key file") + ": directory '" + dir.string() +
                     "' does not exist");

  const tee::SecretBytes key = tee::SecretBytes::random(kMasterKeySize);
  const fs::path tmp = path.string() + ".tmp." + std::to_string(::getpid());
  ::unlink(tmp.c_str());
  {
    // O_EXCL + 0600 from the start: the key is never readable by others, not even for an instant.
    tee::UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    if (!fd)
      throw RunError(tee::quoted_path(tmp, "key file") + ": cannot create (" + std::strerror(errno) + ")");
    const bool ok = tee::pwrite_full(fd.get(), key.view(), 0) && ::fsync(fd.get()) == 0 && fd.close();
    if (!ok) {
      const std::string why = std::strerror(errno);
      ::unlink(tmp.c_str());
      throw RunError(tee::quoted_path(tmp, "key file") + ": write failed (" + why + ")");
    }
  }
  // Without --force, link() fails if the target appeared meanwhile: never clobber a key by a race.
  const int rc = force ? ::rename(tmp.c_str(), path.c_str()) : ::link(tmp.c_str(), path.c_str());
  const int err = errno;
  if (!force) ::unlink(tmp.c_str());
  if (rc != 0) {
    if (force) ::unlink(tmp.c_str());
    if (err == EEXIST)
      throw InputError(tee::quoted_path(path, "key file") + " already exists; pass --force to replace it");
    throw RunError(tee::quoted_path(path, "key file") + ": cannot create (" + std::strerror(err) + ")");
  }
  tee::UniqueFd d(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (d) ::fsync(d.get());
  return key.fingerprint();
}

namespace {

// A key that takes fewer than 8 distinct byte values: all zeros, a repeated byte or short pattern, a
// filled-in placeholder. 32 random bytes take about 30 distinct values; fewer than 8 happens with
// probability below 2^-100, so only a key that was never random is refused.
bool low_entropy(tee::ByteView key) {
  std::array<bool, 256> seen{};
  int distinct = 0;
  for (const std::uint8_t b : key) {
    if (!seen[b]) ++distinct;
    seen[b] = true;
  }
  return distinct < 8;
}

}  // namespace

tee::MasterKey load_key_file(const fs::path& path, const WarnFn& warn, KeyUse use) {
  tee::OpenAttempt a = tee::try_open_regular(path);
  if (a.error == ENOENT) throw InputError(missing_key_file(path, use));
  if (!a.ok()) throw InputError(tee::quoted_path(path, "key file") + ": " + a.why());
  const tee::UniqueFd fd = std::move(a.file.fd);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0)
    throw InputError(tee::quoted_path(path, "key file") + ": cannot stat (" + std::strerror(errno) + ")");
  if (st.st_size != static_cast<off_t>(kMasterKeySize)) {
    throw InputError(tee::quoted_path(path, "key file") + " holds " + std::to_string(st.st_size) +
                     " bytes, expected exactly " + std::to_string(kMasterKeySize) +
                     " (a key written by `teetrain keygen`)");
  }
  if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0 && warn) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    warn(tee::quoted_path(path, "key file") + " is accessible by group or others (mode " + mode +
         "); run `chmod 600 " + path.string() + "`");
  }
  // Read straight into the SecretBytes: no other copy of the key is ever made.
  tee::SecretBytes key(kMasterKeySize);
  const long long got = tee::pread_full(fd.get(), key.mutable_view(), 0);
  if (got != static_cast<long long>(kMasterKeySize))
    throw InputError(tee::quoted_path(path, "key file") + ": short read");
  if (low_entropy(key.view()))
    throw InputError(tee::quoted_path(path, "key file") +
                     " is not a random key (its 32 bytes take fewer than 8 distinct values, as an all-zero "
                     "or repeated pattern does); write one with `teetrain keygen`");
  return tee::MasterKey(std::move(key));
}

}  // namespace tt
