#include "tee/evidence/tsm_report.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstring>
#include <thread>

#include "base/error.h"
#include "tee/bytes.h"
#include "tee/evidence/gather.h"
#include "tee/evidence/nvidia_evidence.h"
#include "tee/regular_file.h"
#include "tee/unique_fd.h"

namespace tt::tee::evidence {
namespace {

using Clock = std::chrono::steady_clock;

// configfs caps a report at 32 KiB today; a quote with its certificates is ~5-10 KiB. Anything larger
// than verify-evidence reads is refused rather than read forever (a --tsm-dir may name anything).
constexpr std::size_t kMaxBlobBytes = kMaxEvidenceFileBytes;
constexpr std::size_t kMaxTextBytes = 256;  // provider, generation, privlevel_floor
// How long a fresh entry may take to show its attributes. The kernel creates them with the directory,
// so on a guest they are there at once; the grace lets a user-space stand-in for the kernel (the CLI
// test's) populate the entry, and tells a plain directory from configfs-tsm by its behaviour.
constexpr auto kEntryGrace = std::chrono::seconds(2);
constexpr auto kPollInterval = std::chrono::milliseconds(5);

struct ErrnoHint {
  int error;
  const char* hint;
};

// What the kernel's refusals mean here (drivers/virt/coco/tsm.c and the TDX and SEV guest drivers).
constexpr std::array kKernelHints{
    ErrnoHint{EBUSY, "a previous quote request is still in flight; try again later"},
    ErrnoHint{
        ETIMEDOUT,
        "the quote service (for TDX: the host's quote generation service) did not answer in the kernel's "
        "own time limit; check that the host runs one"},
    ErrnoHint{ENOTTY,
              "no attestation provider is registered (the tdx_guest or sev_guest driver is not loaded)"},
    ErrnoHint{ENXIO,
              "no attestation provider is registered (the tdx_guest or sev_guest driver is not loaded)"},
    ErrnoHint{EINVAL, "the kernel refused the request's REPORTDATA or privilege level"},
    ErrnoHint{EIO, "the TEE could not produce a report (for TDX: is a quote generation service configured?)"},
};

std::string kernel_refusal(const std::filesystem::path& attr, int error, const std::string& doing) {
  std::string text =
      "configfs-tsm: " + doing + " '" + printable_path(attr) + "' failed: " + std::strerror(error);
  for (const ErrnoHint& h : kKernelHints)
    if (h.error == error) return text + " (" + h.hint + ")";
  return text;
}

[[noreturn]] void throw_io(const std::filesystem::path& attr, int error, const std::string& doing) {
  if (error == EACCES || error == EPERM || error == EROFS)
    throw InputError("configfs-tsm: " + doing + " '" + printable_path(attr) + "': " + std::strerror(error) +
                     "; report entries belong to root: run gather-evidence as root");
  throw RunError(kernel_refusal(attr, error, doing));
}

// A bound on the whole request. Its signal (SIGALRM without SA_RESTART, a handler that does nothing)
// makes a blocked open() or read() return EINTR once the time is up, which the kernel's waits for a
// quote allow (they are interruptible); the caller then sees the deadline passed and gives up. After
// the limit the signal repeats every 100 ms: one that lands while no call is blocked (between two
// attribute operations, or in the wait for a new entry's attributes) is lost, and a call that blocks
// after it would otherwise wait forever.
class Deadline {
 public:
  explicit Deadline(std::chrono::seconds limit) : limit_(limit), at_(Clock::now() + limit) {
    struct sigaction quiet {};
    quiet.sa_handler = +[](int) {};
    sigemptyset(&quiet.sa_mask);
    sigaction(SIGALRM, &quiet, &old_action_);
    constexpr suseconds_t kRepeatUs = 100'000;
    itimerval timer{};
    timer.it_value.tv_sec = static_cast<time_t>(limit.count());
    timer.it_value.tv_usec = limit.count() > 0 ? 0 : kRepeatUs;  // a zero value would disarm it
    timer.it_interval.tv_usec = kRepeatUs;
    setitimer(ITIMER_REAL, &timer, &old_timer_);
  }
  ~Deadline() {
    itimerval off{};
    setitimer(ITIMER_REAL, &off, nullptr);
    sigaction(SIGALRM, &old_action_, nullptr);
  }
  Deadline(const Deadline&) = delete;
  Deadline& operator=(const Deadline&) = delete;

  bool passed() const { return Clock::now() >= at_; }
  // Called when a blocking call returned EINTR: retry unless the time is up.
  void check(const std::filesystem::path& attr) const {
    if (passed())
      throw RunError("configfs-tsm: no answer from the kernel within " + std::to_string(limit_.count()) +
                     " s (waiting on '" + printable_path(attr) +
                     "'): the quote service may be down or slow; try again, or give a longer --timeout");
  }

 private:
  std::chrono::seconds limit_;
  Clock::time_point at_;
  struct sigaction old_action_ {};
  itimerval old_timer_{};
};

// The whole of an attribute, up to `max` bytes; nothing when it does not exist and `optional`.
std::optional<std::vector<std::uint8_t>> read_attribute(const std::filesystem::path& attr, std::size_t max,
                                                        const Deadline& deadline, bool optional = false) {
  UniqueFd fd;
  while (!(fd = UniqueFd(::open(attr.c_str(), O_RDONLY | O_CLOEXEC)))) {
    if (errno == ENOENT && optional) return std::nullopt;
    if (errno != EINTR) throw_io(attr, errno, "opening");
    deadline.check(attr);
  }
  std::vector<std::uint8_t> out;
  std::array<std::uint8_t, 4096> chunk{};
  for (;;) {
    const ssize_t n = ::read(fd.get(), chunk.data(), chunk.size());
    if (n < 0 && errno == EINTR) {
      deadline.check(attr);
      continue;
    }
    if (n < 0) throw_io(attr, errno, "reading");
    if (n == 0) return out;
    out.insert(out.end(), chunk.begin(), chunk.begin() + n);
    if (out.size() > max)
      throw RunError("configfs-tsm: '" + printable_path(attr) + "' holds over " + std::to_string(max) +
                     " bytes, more than any report; is --tsm-dir a configfs-tsm report directory?");
  }
}

std::string read_text(const std::filesystem::path& attr, const Deadline& deadline) {
  const std::vector<std::uint8_t> raw = *read_attribute(attr, kMaxTextBytes, deadline);
  std::string text(raw.begin(), raw.end());
  while (!text.empty() && (text.back() == '\n' || text.back() == '\0')) text.pop_back();
  return text;
}

std::uint64_t read_number(const std::filesystem::path& attr, const Deadline& deadline) {
  const std::string text = read_text(attr, deadline);
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size())
    throw RunError("configfs-tsm: '" + printable_path(attr) + "' is not a number ('" + text.substr(0, 32) +
                   "')");
  return v;
}

// One write, then close: configfs hands a binary attribute's bytes to the kernel on close, so a refusal
// may come from either.
void write_attribute(const std::filesystem::path& attr, ByteView bytes, const Deadline& deadline) {
  UniqueFd fd;
  while (!(fd = UniqueFd(::open(attr.c_str(), O_WRONLY | O_CLOEXEC)))) {
    if (errno != EINTR) throw_io(attr, errno, "opening");
    deadline.check(attr);
  }
  if (!pwrite_full(fd.get(), bytes, 0)) throw_io(attr, errno, "writing");
  if (!fd.close()) throw_io(attr, errno, "writing");
}

bool attribute_exists(const std::filesystem::path& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0;
}

// One report entry: made fresh, removed on every path out (configfs removes its attributes with it).
class TsmEntry {
 public:
  explicit TsmEntry(const std::filesystem::path& dir)
      : path_(dir / ("teetrain-" + std::to_string(::getpid()) + "-" + to_hex(random_array<4>()))) {
    if (::mkdir(path_.c_str(), 0700) != 0) {
      const int error = errno;
      if (error == ENOENT || error == ENOTDIR)
        throw InputError("no configfs-tsm report directory at '" + printable_path(dir) +
                         "'; nothing gathered. " + no_hardware_advice());
      throw_io(path_, error, "creating the report entry");
    }
  }
  ~TsmEntry() { remove(); }
  TsmEntry(const TsmEntry&) = delete;
  TsmEntry& operator=(const TsmEntry&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // Removes the entry; false (errno set) if the kernel would not let it go.
  bool remove() {
    if (removed_) return true;
    removed_ = ::rmdir(path_.c_str()) == 0;
    return removed_;
  }

 private:
  std::filesystem::path path_;
  bool removed_ = false;
};

// Steps 1 and 2 of the protocol: an entry whose attributes appeared.
void await_attributes(const TsmEntry& entry, const std::filesystem::path& dir) {
  const auto until = Clock::now() + kEntryGrace;
  while (!attribute_exists(entry.path() / "inblob")) {
    if (Clock::now() >= until)
      throw InputError(
          "'" + printable_path(dir) +
          "' is not a configfs-tsm report directory (a new entry in it got no inblob, outblob, "
          "provider): not a TDX or SEV-SNP guest, or --tsm-dir names another directory; nothing gathered. " +
          no_hardware_advice());
    std::this_thread::sleep_for(kPollInterval);
  }
}

// Step 3: SEV-SNP's privilege level, where the provider has one. Returns the writes made (0 or 1).
std::uint64_t set_privlevel(const TsmEntry& entry, const Deadline& deadline) {
  const std::filesystem::path privlevel = entry.path() / "privlevel";
  if (!attribute_exists(privlevel)) return 0;
  const std::filesystem::path floor_attr = entry.path() / "privlevel_floor";
  const std::uint64_t floor = attribute_exists(floor_attr) ? read_number(floor_attr, deadline) : 0;
  const std::string text = std::to_string(floor);
  write_attribute(privlevel, bytes_of(text), deadline);
  return 1;
}

}  // namespace

std::optional<std::string> tsm_absence(const std::filesystem::path& report_dir) {
  struct stat st {};
  if (::stat(report_dir.c_str(), &st) != 0)
    return "no configfs-tsm report directory at '" + printable_path(report_dir) +
           "' (not a TDX or SEV-SNP guest, or the kernel lacks CONFIG_TSM_REPORTS, or configfs is mounted "
           "elsewhere: give --tsm-dir)";
  if (!S_ISDIR(st.st_mode)) return "--tsm-dir '" + printable_path(report_dir) + "' is not a directory";
  return std::nullopt;
}

TsmReport request_tsm_report(const std::filesystem::path& report_dir, const ReportData& data,
                             std::chrono::seconds timeout,
                             const std::function<void(const std::string& provider)>& accept_provider) {
  const Deadline deadline(timeout);
  TsmEntry entry(report_dir);
  await_attributes(entry, report_dir);
  TsmReport r;
  r.entry = entry.path();
  r.provider = read_text(entry.path() / "provider", deadline);
  accept_provider(r.provider);
  std::uint64_t writes = set_privlevel(entry, deadline);
  write_attribute(entry.path() / "inblob", data, deadline);
  ++writes;
  r.outblob = *read_attribute(entry.path() / "outblob", kMaxBlobBytes, deadline);
  r.auxblob = read_attribute(entry.path() / "auxblob", kMaxBlobBytes, deadline, true)
                  .value_or(std::vector<std::uint8_t>{});
  const std::uint64_t generation = read_number(entry.path() / "generation", deadline);
  if (generation != writes)
    throw RunError("configfs-tsm: the report entry '" + printable_path(entry.path()) + "' was written " +
                   std::to_string(generation) + " time(s), " + std::to_string(writes) +
                   " of them by us: another process changed the request while it was served; try again");
  if (r.outblob.empty())
    throw RunError("configfs-tsm: the kernel returned an empty report (provider " + r.provider + ")");
  if (!entry.remove())
    r.notes.push_back("could not remove the report entry '" + printable_path(entry.path()) + "' (" +
                      std::strerror(errno) + "); remove it with rmdir");
  return r;
}

}  // namespace tt::tee::evidence
