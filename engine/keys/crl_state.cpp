#include "engine/keys/crl_state.h"

#include <unistd.h>

#include <charconv>
#include <optional>
#include <vector>

#include "base/error.h"
#include "base/hex.h"
#include "engine/file_util.h"
#include "tee/bytes.h"
#include "tee/digest.h"
#include "tee/errors.h"
#include "tee/identity/x509.h"
#include "tee/regular_file.h"

namespace tt {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kHeader = "teetrain-crl-state/1\n";
constexpr std::size_t kMaxNumberDigits = 19;  // tee::kMaxCrlNumber = 2^63-1 has 19 digits

[[noreturn]] void malformed(const std::string& what, std::size_t line, const std::string& why) {
  throw IntegrityError(what + " is malformed (line " + std::to_string(line) + ": " + why +
                       "): it is this rank's memory of the newest revocation list it accepted; restore it, "
                       "or delete it to accept the list at hand as the newest");
}

// "0" or a decimal without a leading zero, at most tee::kMaxCrlNumber; nullopt otherwise.
std::optional<std::uint64_t> parse_number(std::string_view s) {
  if (s.empty() || s.size() > kMaxNumberDigits || (s.size() > 1 && s.front() == '0')) return std::nullopt;
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v > tee::kMaxCrlNumber) return std::nullopt;
  return v;
}

CrlState read_state(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(path, ec))) return {};
  const std::vector<std::uint8_t> bytes = tee::read_regular_file(path, "CRL state", kMaxCrlStateBytes);
  return parse_crl_state(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()),
                         "CRL state " + tee::quoted_path(path));
}

}  // namespace

CrlState parse_crl_state(std::string_view text, const std::string& what) {
  if (text.size() > kMaxCrlStateBytes) malformed(what, 1, std::to_string(text.size()) + " bytes");
  if (!text.starts_with(kHeader)) malformed(what, 1, "not a teetrain-crl-state/1 file");
  text.remove_prefix(kHeader.size());
  CrlState state;
  for (std::size_t line = 2; !text.empty(); ++line) {
    const std::size_t end = text.find('\n');
    if (end == std::string_view::npos) malformed(what, line, "no newline at its end");
    const std::string_view l = text.substr(0, end);
    text.remove_prefix(end + 1);
    if (state.size() == kMaxCrlStateRoots)
      malformed(what, line, "more than " + std::to_string(kMaxCrlStateRoots) + " vendor roots");
    const std::size_t space = l.find(' ');
    const std::string_view root = l.substr(0, space);
    if (space == std::string_view::npos || !is_hex(root, 64))
      malformed(what, line, "expected '<64 lowercase hex digits> <number>'");
    const std::optional<std::uint64_t> number = parse_number(l.substr(space + 1));
    if (!number) malformed(what, line, "the CRL number is not a decimal from 0 to 2^63-1");
    if (!state.empty() && state.rbegin()->first >= root)
      malformed(what, line, "vendor roots out of order or repeated");
    state.emplace(std::string(root), *number);
  }
  return state;
}

std::string encode_crl_state(const CrlState& state) {
  std::string out(kHeader);
  for (const auto& [root, number] : state) out += root + " " + std::to_string(number) + "\n";
  return out;
}

fs::path crl_state_beside(const fs::path& device_identity) {
  return device_identity.string() + ".crl-state";
}

void remember_crl(const fs::path& state, const tee::TrustAnchor& anchor, int rank) {
  const std::optional<tee::CrlFacts>& list = anchor.crl_facts();
  if (!list) return;
  const fs::path dir = state.parent_path().empty() ? fs::path(".") : state.parent_path();
  std::error_code ec;
  if (!fs::is_directory(dir, ec) || ::access(dir.c_str(), W_OK) != 0)
    throw InputError("--crl-state " + tee::printable_path(state) + ": " +
                     (fs::is_directory(dir, ec) ? "this rank cannot write in " + tee::printable_path(dir)
                                                : std::string("no such directory")) +
                     "; give the file in a directory this rank can write");
  const FileLock lock(state);  // ranks of one host may share the file: one read-modify-write at a time
  CrlState known = read_state(state);
  const std::string root = tee::to_hex(tee::sha256(anchor.root().der()));
  const auto it = known.find(root);
  if (it != known.end() && list->number < it->second) {
    throw IntegrityError("rank " + std::to_string(rank) + ": revocation list " +
                         tee::quoted_path(list->path) + " is number " + std::to_string(list->number) +
                         ", older than number " + std::to_string(it->second) +
                         " this rank accepted before (CRL state " + tee::quoted_path(state) +
                         "): an older list revokes less; put the vendor's current list back");
  }
  if (it != known.end() && list->number == it->second) return;
  if (it == known.end() && known.size() == kMaxCrlStateRoots)
    throw InputError("CRL state " + tee::quoted_path(state) + " already remembers " +
                     std::to_string(kMaxCrlStateRoots) + " vendor roots; give this root its own --crl-state");
  known[root] = list->number;
  write_text_atomic(state, encode_crl_state(known));
}

}  // namespace tt
