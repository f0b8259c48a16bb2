// The Linux kernel's configfs-tsm report interface (Documentation/ABI/testing/configfs-tsm, v6.7 and
// later): how a confidential guest asks its TEE for a signed report over 64 bytes of its own data.
//
// Note [configfs-tsm protocol]: under the report directory (default /sys/kernel/config/tsm/report)
//   1. mkdir a fresh entry: the kernel creates its attributes with it; one entry per request means no
//      other process shares our attributes (the ABI's own advice against conflicts);
//   2. read `provider`: "tdx_guest" (an Intel TDX quote) or "sev_guest" (an AMD SEV-SNP report);
//   3. SEV-SNP only: write `privlevel` (the VMPL the report is for) = `privlevel_floor`, the lowest
//      the kernel accepts, which is the level this guest runs at;
//   4. write the 64 bytes to `inblob` in one write and close it: configfs takes a binary attribute's
//      bytes on close, so the close's result is the write's;
//   5. read `outblob`: the kernel generates the report now; for TDX it waits for a quote service outside
//      the guest (interruptibly, so our timeout's signal ends the wait);
//   6. read `auxblob` where present: SEV-SNP's certificate table when the host supplies one;
//   7. read `generation`: it counts writes to the entry's attributes, so it must equal ours (1, or 2
//      with privlevel); anything else means another writer changed the request while it was served;
//   8. rmdir the entry (TsmEntry's destructor on every path).
// configfs attributes are not regular files in the sense tee/regular_file.h checks (their size is
// not what a read returns, and a read may block), so they are read here, bounded in size and time.
#pragma once
#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tee/identity/kx_binding.h"

namespace tt::tee::evidence {

struct TsmReport {
  std::string provider;               // "tdx_guest", "sev_guest"
  std::vector<std::uint8_t> outblob;  // the quote or report
  std::vector<std::uint8_t> auxblob;  // empty when the provider gave none
  std::filesystem::path entry;        // the entry that served it (removed again)
  std::vector<std::string> notes;     // e.g. an entry that could not be removed
};

// Why `report_dir` cannot serve reports (missing, not a directory), or nothing when it may.
std::optional<std::string> tsm_absence(const std::filesystem::path& report_dir);

// Runs the protocol above for `data`. `accept_provider` sees the provider before anything is written
// and throws to stop (e.g. an SEV-SNP guest when a TDX quote was asked for). Throws InputError when
// the directory does not behave as configfs-tsm or may not be written (not root), RunError when the
// kernel refuses or `timeout` passes, never leaving its entry behind when the kernel lets it go.
TsmReport request_tsm_report(const std::filesystem::path& report_dir, const ReportData& data,
                             std::chrono::seconds timeout,
                             const std::function<void(const std::string& provider)>& accept_provider);

}  // namespace tt::tee::evidence
