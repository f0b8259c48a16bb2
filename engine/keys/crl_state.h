// Each rank's memory of the newest revocation list it has accepted (Note [Revocation list freshness],
// tee/identity/x509.h): per vendor root, the highest CRL number, in a small local state file.
//
//   default   "<device identity>.crl-state", beside the rank's own identity file: the device's own
//             storage, where a real GPU would keep a monotonic counter (crl_state_beside);
//             --crl-state FILE moves it ("{rank}" becomes the rank)
//
// Format (text; untrusted, so parse_crl_state refuses anything else):
//   "teetrain-crl-state/1\n"
//   "<root> <number>\n"   0 .. kMaxCrlStateRoots lines, roots strictly ascending (each once):
//                         root    SHA-256 of the vendor root certificate's DER, 64 lowercase hex digits
//                         number  decimal, no sign, no leading zero, at most tee::kMaxCrlNumber
// nothing else; the whole at most kMaxCrlStateBytes.
//
// remember_crl runs when a rank loads its trust anchor, before any handshake. Under a lock on
// "<state>.lock" it reads the state, refuses (IntegrityError) a list whose number is below the one
// remembered for its root, and records a higher one (temporary file, fsync, rename): ranks sharing one
// state file never lose each other's update, and a crash leaves the old file or the new one.
//
// What it rests on: the state is only as trustworthy as the disk it is on. Whoever can roll it back or
// delete it can put an older list back too; a missing file means nothing was seen yet (the list at hand
// is accepted and remembered). What bounds an older list then is its nextUpdate, and the ranks'
// agreement on their inputs names a rank whose list is not rank 0's (engine/run/input_agreement.h).
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>

namespace tt {

namespace tee {
class TrustAnchor;
}

inline constexpr std::size_t kMaxCrlStateRoots = 256;
inline constexpr std::size_t kMaxCrlStateBytes = 32 * 1024;  // the header and 256 full lines fit

// Vendor root (SHA-256 of its DER, hex) -> the highest CRL number accepted under it.
using CrlState = std::map<std::string, std::uint64_t>;

// Parses a state file's bytes; IntegrityError("<what> is malformed (line N: ...)") on anything but the
// format above.
CrlState parse_crl_state(std::string_view text, const std::string& what);
std::string encode_crl_state(const CrlState& state);

// "<identity>.crl-state".
std::filesystem::path crl_state_beside(const std::filesystem::path& device_identity);

// Checks `anchor`'s revocation list against the state at `state` and records its number when higher.
// IntegrityError naming `rank`, the list, its number and the number remembered when the list is
// older; InputError when the state's directory does not exist or cannot be written. An anchor
// without a list: nothing.
void remember_crl(const std::filesystem::path& state, const tee::TrustAnchor& anchor, int rank);

}  // namespace tt
