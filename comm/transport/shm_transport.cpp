#include "comm/transport/shm_transport.h"

#include <signal.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <deque>
#include <optional>
#include <vector>

#include "base/error.h"
#include "comm/reduce_memory.h"
#include "comm/transport/shared_buffer.h"
#include "comm/transport/shm_channel.h"
#include "comm/transport/shm_segment.h"

namespace tt::comm {

namespace {

using shm::kCountersBytes;
using shm::kDirect;
using shm::kHeaderBytes;
using shm::kInline;
using shm::kLine;
using shm::kSlotsOffset;
using shm::kTickets;
using shm::kTicketsBytes;
using shm::SlotHeader;

std::uint64_t load_acquire(std::uint64_t* p) {
  return std::atomic_ref<std::uint64_t>(*p).load(std::memory_order_acquire);
}
void store_release(std::uint64_t* p, std::uint64_t v) {
  std::atomic_ref<std::uint64_t>(*p).store(v, std::memory_order_release);
}

// One ordered pair's channel in shared memory (Note [Shared-memory channels]).
struct Channel {
  std::byte* base = nullptr;
  std::size_t slot_stride = 0;
  std::size_t slots = 0;
  std::uint64_t* written() const { return reinterpret_cast<std::uint64_t*>(base); }
  std::uint64_t* read() const { return reinterpret_cast<std::uint64_t*>(base + kLine); }
  // A direct read's completion: the receiver stores ticket + 1 once it has copied the bytes.
  std::uint64_t* done(std::uint64_t ticket) const {
    return reinterpret_cast<std::uint64_t*>(base + kCountersBytes) + ticket % kTickets;
  }
  // Note [Direct reads]: a done word only grows (ticket + 1, then that + kTickets, ...), so a ticket
  // is done once its word is past it, however many later tickets have reused the word since.
  bool ticket_done(std::uint64_t ticket) const { return load_acquire(done(ticket)) > ticket; }
  // Note [Withdrawn sends]: the sender stores ticket + 1 here before the ticket's buffer may change.
  std::uint64_t* withdrawn(std::uint64_t ticket) const {
    return reinterpret_cast<std::uint64_t*>(base + kCountersBytes + kTicketsBytes) + ticket % kTickets;
  }
  std::byte* slot(std::uint64_t index) const {
    return base + kSlotsOffset + static_cast<std::size_t>(index % slots) * slot_stride;
  }
  static std::size_t bytes(const ShmLayout& l) {
    return kSlotsOffset + l.slots * (kHeaderBytes + l.slot_bytes);
  }
};

struct SendState;
struct RecvState;

// A buffer this rank shares (Transport::share).
struct SharedRegion {
  const std::byte* base = nullptr;
  std::size_t bytes = 0;
  int fd = -1;
  std::uint64_t id = 0;
};

// How many of a peer's shared buffers stay mapped here: the oldest is unmapped to make room.
constexpr std::size_t kPeerViews = 8;
// A sum read with process_vm_readv goes through a bounce buffer of this size, still in cache when added.
constexpr std::size_t kBounceBytes = std::size_t{256} << 10;

// A message that arrived before a receive was posted for it.
struct Unexpected {
  SlotHeader header;
  std::vector<std::byte> data;  // inline payload
};

struct HostPeer {
  HostPeer() = default;
  HostPeer(HostPeer&&) = default;  // move-only (its views): a vector of them moves them when it grows
  HostPeer& operator=(HostPeer&&) = default;
  HostPeer(const HostPeer&) = delete;
  HostPeer& operator=(const HostPeer&) = delete;
  ~HostPeer() = default;

  int rank = -1;  // in the transport's communicator
  pid_t pid = 0;  // its process, for direct reads
  Channel out;    // in the peer's segment: this rank's messages to it
  Channel in;     // in this rank's segment: its messages to this rank
  std::uint64_t next_write = 0;
  std::uint64_t next_read = 0;
  std::uint32_t next_payload_tag = 0;
  std::uint64_t next_ticket = 0;  // direct reads sent to it
  std::deque<SendState*> sends;   // posted, header not yet in a slot (in send order)
  std::deque<RecvState*> recvs;   // posted, not yet matched (in posting order)
  std::deque<Unexpected> unexpected;
  std::vector<PeerView> views;         // its shared buffers mapped here, oldest first
  std::vector<std::uint64_t> refused;  // ... and those the host would not let us map
};

}  // namespace

struct ShmTransport::Impl {
  Impl(MpiTransport& m, ShmLayout l) : mpi(m), payload(m.comm(), m.timeout()), layout(l) {}

  MpiTransport& mpi;
  MpiTransport payload;  // long messages' bytes, on a communicator of their own
  ShmLayout layout;
  std::vector<ShmSegment> segments;  // this rank's (index 0) and its host peers'
  std::vector<HostPeer> peers;
  std::vector<int> peer_index;  // by rank: index into `peers`, -1 for a rank on another host
  std::string fallback;
  int payloads_in_flight = 0;        // long messages' MPI requests not yet complete
  int remote_in_flight = 0;          // requests to or from ranks on other hosts not yet complete
  bool direct = false;               // long messages are read from the sender's memory (set-up's probe)
  std::vector<SharedRegion> shared;  // this rank's shared buffers
  std::vector<float> bounce;         // (kBounceBytes / 4,) a sum read with process_vm_readv

  HostPeer* host_peer(int rank) {
    const int i = rank >= 0 && rank < static_cast<int>(peer_index.size())
                      ? peer_index[static_cast<std::size_t>(rank)]
                      : -1;
    return i < 0 ? nullptr : &peers[static_cast<std::size_t>(i)];
  }
  void progress();
  bool payload_done(Request& r) {
    if (!payload.test(r)) return false;
    --payloads_in_flight;
    return true;
  }
  void drain(HostPeer& p);
  void push(HostPeer& p);
  bool write(HostPeer& p, SendState& s);
  void deliver(HostPeer& p, const SlotHeader& h, const std::byte* inline_payload);
  void match(HostPeer& p, RecvState& r, const SlotHeader& h, const std::byte* inline_payload);
  std::optional<std::string> read_direct(HostPeer& p, const SlotHeader& h, std::span<std::byte> into);
  std::optional<std::string> sum_direct(HostPeer& p, const SlotHeader& h, float* acc);
  int read_remote(const HostPeer& p, std::uint64_t address, std::span<std::byte> into);
  std::optional<std::string> finish_direct(HostPeer& p, const SlotHeader& h, int read_errno);
  const std::byte* view_of(HostPeer& p, const SlotHeader& h);
  const SharedRegion* region_of(const void* p, std::size_t bytes) const;
  void fill_shared(SlotHeader& h, std::span<const std::byte> data) const;
  Request post_receive(HostPeer& p, std::unique_ptr<RecvState> state);
  Request remote(Request r);  // wraps MPI's request to another host (Note [Progress on both paths])
  [[noreturn]] void corrupt(const HostPeer& p, const std::string& what) const {
    throw IntegrityError("rank " + std::to_string(mpi.rank()) + ": the shared-memory channel with rank " +
                         std::to_string(p.rank) + " is corrupt (" + what +
                         "): another process on this host wrote into it");
  }
};

namespace {

struct SendState final : RequestState {
  SendState(ShmTransport::Impl& t, HostPeer& p, std::span<const std::byte> d, int g)
      : impl(t), peer(p), data(d), tag(g) {}
  ~SendState() override {
    if (!written) std::erase(peer.sends, this);  // never started: the stream is untouched
    if (payload.pending()) --impl.payloads_in_flight;
    // Note [Withdrawn sends]: abandoned while the receiver may still read it.
    if (ticket && !peer.out.ticket_done(*ticket)) {
      std::atomic_ref<std::uint64_t>(*peer.out.withdrawn(*ticket))
          .store(*ticket + 1, std::memory_order_seq_cst);
    }
  }
  // Every poll moves the whole transport on, as MPI's do: a sender that waits for one message must
  // still write the messages queued behind it and drain what its peers send.
  std::optional<std::size_t> poll() override {
    impl.progress();
    if (!written) return std::nullopt;
    if (payload.pending() && !impl.payload_done(payload)) return std::nullopt;
    if (ticket && !peer.out.ticket_done(*ticket)) return std::nullopt;
    return data.size();
  }
  ShmTransport::Impl& impl;
  HostPeer& peer;
  std::span<const std::byte> data;
  int tag;
  bool written = false;
  Request payload;                      // a long message's bytes through MPI
  std::optional<std::uint64_t> ticket;  // ... or read directly: done once the receiver says so
};

struct RecvState final : RequestState {
  RecvState(ShmTransport::Impl& t, HostPeer& p, std::span<std::byte> b, int g, bool add = false)
      : impl(t), peer(p), buffer(b), tag(g), adds(add) {}
  ~RecvState() override {
    if (!matched) std::erase(peer.recvs, this);
    if (payload.pending()) --impl.payloads_in_flight;
  }
  std::optional<std::size_t> poll() override {
    impl.progress();
    if (!error.empty()) {
      if (framing) throw FramingError(error);
      throw RunError(error);
    }
    if (!matched) return std::nullopt;
    if (payload.pending() && !impl.payload_done(payload)) return std::nullopt;
    if (!staged.empty()) {  // a sum's bytes came through MPI: add them now
      add_floats(acc(), staged.data(), bytes / sizeof(float));
      staged.clear();
    }
    return bytes;
  }
  ShmTransport::Impl& impl;
  HostPeer& peer;
  std::span<std::byte> buffer;  // a sum's: its accumulator's bytes
  int tag;
  bool adds = false;  // irecv_sum: the message is added into `buffer`'s floats instead of stored
  float* acc() const { return reinterpret_cast<float*>(buffer.data()); }
  bool matched = false;
  std::size_t bytes = 0;
  std::string error;
  bool framing = false;  // `error` is the message's length or shape: a FramingError
  Request payload;
  std::vector<float> staged;  // a sum's bytes through MPI, until they have arrived
};

// A message to or from a rank on another host: MPI's request, polled after this transport's progress
// (Note [Progress on both paths]).
struct RemoteState final : RequestState {
  RemoteState(ShmTransport::Impl& t, Request r) : impl(t), inner(std::move(r)) { ++impl.remote_in_flight; }
  ~RemoteState() override {
    if (!finished) --impl.remote_in_flight;
  }
  std::optional<std::size_t> poll() override {
    impl.progress();
    if (!impl.mpi.test(inner)) return std::nullopt;
    finished = true;
    --impl.remote_in_flight;
    return inner.bytes();
  }
  ShmTransport::Impl& impl;
  Request inner;
  bool finished = false;
};

}  // namespace

void ShmTransport::Impl::progress() {
  for (HostPeer& p : peers) {
    drain(p);
    push(p);
  }
  // MPI moves a long message on only inside MPI calls (comm/transport/mpi_transport.h), and its
  // receive is posted to MPI only once its size is known (Note [Sizes before receives]): while one is
  // in flight, or a message to or from another host (Note [Progress on both paths]), match what has
  // arrived and give MPI a turn here, whichever request this rank waits for.
  if (payloads_in_flight > 0 || remote_in_flight > 0) {
    payload.match_arrived();
    int flag = 0;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, payload.comm(), &flag, MPI_STATUS_IGNORE);
  }
}

void ShmTransport::Impl::drain(HostPeer& p) {
  const std::uint64_t written = load_acquire(p.in.written());
  if (written == p.next_read) return;
  if (auto bad = shm::written_error(written, p.next_read, p.in.slots)) corrupt(p, *bad);
  for (; p.next_read < written; ++p.next_read) {
    const std::byte* slot = p.in.slot(p.next_read);
    SlotHeader h{};
    std::memcpy(&h, slot, sizeof h);
    if (auto bad = shm::slot_header_error(h, layout.slot_bytes)) corrupt(p, *bad);
    deliver(p, h, slot + kHeaderBytes);
  }
  store_release(p.in.read(), p.next_read);
}

void ShmTransport::Impl::deliver(HostPeer& p, const SlotHeader& h, const std::byte* inline_payload) {
  const auto it =
      std::find_if(p.recvs.begin(), p.recvs.end(), [&](const RecvState* r) { return r->tag == h.tag; });
  if (it != p.recvs.end()) {
    RecvState* r = *it;
    p.recvs.erase(it);
    match(p, *r, h, inline_payload);
    return;
  }
  Unexpected u{h, {}};
  if (h.payload_tag == kInline) u.data.assign(inline_payload, inline_payload + h.bytes);
  p.unexpected.push_back(std::move(u));
}

void ShmTransport::Impl::match(HostPeer& p, RecvState& r, const SlotHeader& h,
                               const std::byte* inline_payload) {
  r.matched = true;
  const auto from = [&] {  // built only for an error: this is every message's path
    return "rank " + std::to_string(mpi.rank()) + ": a message of " + std::to_string(h.bytes) +
           " bytes from rank " + std::to_string(p.rank) + " (tag " + std::to_string(h.tag) + ")";
  };
  if (h.bytes > r.buffer.size()) {  // Note [Sizes before receives]: its header said so; never read
    r.error = describe_oversize(mpi.rank(), p.rank, h.tag, h.bytes, r.buffer.size());
    r.framing = true;
    return;
  }
  if (r.adds && (h.bytes % sizeof(float) != 0 || h.address % alignof(float) != 0)) {
    r.framing = true;
    r.error = from() + " is not whole, aligned floats, so it cannot be added in";
    return;
  }
  r.bytes = static_cast<std::size_t>(h.bytes);
  const std::size_t n = r.bytes / sizeof(float);
  if (h.payload_tag == kInline) {
    if (r.adds) {
      add_floats(r.acc(), reinterpret_cast<const float*>(inline_payload), n);
    } else if (r.bytes > 0) {
      std::memcpy(r.buffer.data(), inline_payload, r.bytes);
    }
  } else if (h.payload_tag == kDirect) {
    auto stopped = r.adds ? sum_direct(p, h, r.acc()) : read_direct(p, h, r.buffer.first(r.bytes));
    if (stopped) r.error = from() + " " + *stopped;
  } else {
    std::span<std::byte> into = r.buffer.first(r.bytes);
    if (r.adds) {
      r.staged.resize(n);
      into = std::as_writable_bytes(std::span(r.staged));
    }
    r.payload = payload.irecv(p.rank, into, h.payload_tag);
    ++payloads_in_flight;
  }
}

// Note [Direct reads]: the receiver copies a long message out of the sender's memory with one
// process_vm_readv into the receive buffer: one copy, as Open MPI's shared-memory single-copy path
// makes, without its rendezvous, matching and requests, and without the sender having to run. The
// sender keeps its buffer until the receiver stores ticket + 1 in the channel's done word for the
// ticket (ticket mod kTickets). A word is reused kTickets tickets later, once its last ticket is done,
// so it only grows, and a send is done once its word is past its ticket: the ring may wait for a send
// long after later tickets reused the word. Completion waits for a matching receive, as the MPI
// rendezvous it replaces does (a message longer than a slot is far above Open MPI's 4 KiB eager
// limit). A header whose address the sender has not mapped (a writer that is not ours) is refused by
// the kernel and reported as a corrupt channel.
//
// Note [Withdrawn sends]: a send abandoned before it completes (its rank is failing, and its buffer
// will be freed and reused) stores ticket + 1 in the ticket's withdrawn word first (seq_cst).
// The receiver reads the bytes, then reads that word (seq_cst): a read that overlapped any change to
// the buffer finds the word set, so its bytes (garbage, not an attack's) are never opened or added;
// the receive fails as a stopped peer (RunError), as does a read refused because the sender's
// process is gone. Only a refusal from a live sender that withdrew nothing is a corrupt channel. So a
// rank that stops first is never reported by its peers as an attacker (docs/design.md §7).
// The two seq_cst operations order the accesses around them (a seqlock's argument).
std::optional<std::string> ShmTransport::Impl::read_direct(HostPeer& p, const SlotHeader& h,
                                                           std::span<std::byte> into) {
  int err = 0;
  if (const std::byte* view = view_of(p, h)) {
    std::memcpy(into.data(), view, into.size());
  } else {
    err = read_remote(p, h.address, into);
  }
  return finish_direct(p, h, err);
}

// Note [Shared buffers]: a sum of a direct message adds straight from the sender's buffer where it is
// mapped here; else it reads it in pieces small enough to be added while still in cache. A sum that
// finds the send withdrawn (Note [Withdrawn sends]) has added garbage: its receive fails, and the
// accumulator is the failing run's, never used.
std::optional<std::string> ShmTransport::Impl::sum_direct(HostPeer& p, const SlotHeader& h, float* acc) {
  const std::size_t n = static_cast<std::size_t>(h.bytes) / sizeof(float);
  int err = 0;
  if (const std::byte* view = view_of(p, h)) {
    add_floats(acc, reinterpret_cast<const float*>(view), n);
  } else {
    bounce.resize(kBounceBytes / sizeof(float));
    for (std::size_t i = 0; i < n && err == 0; i += bounce.size()) {
      const std::size_t k = std::min(bounce.size(), n - i);
      err = read_remote(p, h.address + i * sizeof(float), std::as_writable_bytes(std::span(bounce).first(k)));
      if (err == 0) add_floats(acc + i, bounce.data(), k);
    }
  }
  return finish_direct(p, h, err);
}

// Note [Withdrawn sends]: after a direct read (`read_errno` 0, or why the kernel refused it), whether
// its bytes are the sender's: nullopt, or why not when the sender stopped. Marks the ticket done.
std::optional<std::string> ShmTransport::Impl::finish_direct(HostPeer& p, const SlotHeader& h,
                                                             int read_errno) {
  // A read-modify-write, not a plain load: a full barrier after the data reads (x86: a locked
  // instruction), which a load alone is not, and one ThreadSanitizer understands (a fence it does not).
  const bool withdrawn =
      std::atomic_ref<std::uint64_t>(*p.in.withdrawn(h.ticket)).fetch_add(0, std::memory_order_seq_cst) ==
      h.ticket + 1;
  store_release(p.in.done(h.ticket), h.ticket + 1);
  const std::string who = "rank " + std::to_string(p.rank);
  if (withdrawn)
    return "was withdrawn while it was read: " + who + " stopped first, so its bytes are not used";
  if (read_errno == 0) return std::nullopt;
  if (read_errno == ESRCH || (kill(p.pid, 0) != 0 && errno == ESRCH))
    return "could not be read: the process of " + who + " has exited";
  corrupt(p, "a long message's bytes are not readable in the sender's memory");
}

// Copies `into.size()` bytes at `address` in the peer's memory with process_vm_readv, which may stop
// short. Returns 0, or the errno of a read the kernel refused (the caller decides what it means).
int ShmTransport::Impl::read_remote(const HostPeer& p, std::uint64_t address, std::span<std::byte> into) {
  for (std::size_t got = 0; got < into.size();) {
    iovec local{into.data() + got, into.size() - got};
    iovec remote{reinterpret_cast<void*>(static_cast<std::uintptr_t>(address + got)), into.size() - got};
    const ssize_t n = process_vm_readv(p.pid, &local, 1, &remote, 1, 0);
    if (n <= 0) return n == 0 ? EFAULT : errno;
    got += static_cast<std::size_t>(n);
  }
  return 0;
}

// Where a direct message's bytes are mapped here (Note [Shared buffers]), or null: not from a shared
// buffer, or one the host will not let us map. The header has passed slot_header_error, so the
// message lies within the buffer it names; a descriptor that is not that buffer is a corrupt channel.
const std::byte* ShmTransport::Impl::view_of(HostPeer& p, const SlotHeader& h) {
  if (h.buffer_id == 0 || std::find(p.refused.begin(), p.refused.end(), h.buffer_id) != p.refused.end())
    return nullptr;
  const auto it = std::find_if(p.views.begin(), p.views.end(), [&](const PeerView& v) {
    return v.id() == h.buffer_id && v.size() >= h.buffer_bytes;
  });
  const std::size_t offset = static_cast<std::size_t>(h.address - h.buffer_base);
  if (it != p.views.end()) return it->data() + offset;
  PeerView::Failure failure{};
  std::string error;
  auto view = PeerView::open(p.pid, h.buffer_fd, h.buffer_id, static_cast<std::size_t>(h.buffer_bytes),
                             failure, error);
  if (!view) {
    if (failure == PeerView::Failure::Mismatch) corrupt(p, error);
    p.refused.push_back(h.buffer_id);
    return nullptr;
  }
  if (p.views.size() == kPeerViews) p.views.erase(p.views.begin());
  p.views.push_back(std::move(*view));
  return p.views.back().data() + offset;
}

// The shared buffer that holds `bytes` at `p`, or null.
const SharedRegion* ShmTransport::Impl::region_of(const void* p, std::size_t bytes) const {
  const auto begin = reinterpret_cast<std::uintptr_t>(p);
  for (const SharedRegion& r : shared) {
    const auto base = reinterpret_cast<std::uintptr_t>(r.base);
    if (begin >= base && bytes <= r.bytes && begin - base <= r.bytes - bytes) return &r;
  }
  return nullptr;
}

// Names the shared buffer a direct message's bytes lie in, if any (Note [Shared buffers]).
void ShmTransport::Impl::fill_shared(SlotHeader& h, std::span<const std::byte> data) const {
  const SharedRegion* r = region_of(data.data(), data.size());
  if (r == nullptr) return;
  h.buffer_fd = r->fd;
  h.buffer_id = r->id;
  h.buffer_base = reinterpret_cast<std::uintptr_t>(r->base);
  h.buffer_bytes = r->bytes;
}

bool ShmTransport::Impl::write(HostPeer& p, SendState& s) {
  const std::uint64_t read = load_acquire(p.out.read());
  if (auto bad = shm::read_error(read, p.next_write)) corrupt(p, *bad);
  if (p.next_write - read >= p.out.slots) return false;  // every slot in flight
  const bool long_message = s.data.size() > layout.slot_bytes;
  // Note [Direct reads]: a done word is free once the ticket kTickets before this one is done.
  if (long_message && direct && p.next_ticket >= kTickets && !p.out.ticket_done(p.next_ticket - kTickets))
    return false;
  std::byte* slot = p.out.slot(p.next_write);
  SlotHeader h{s.data.size(), s.tag, kInline};
  if (!long_message) {
    if (!s.data.empty()) std::memcpy(slot + kHeaderBytes, s.data.data(), s.data.size());
  } else if (direct) {
    h.payload_tag = kDirect;
    h.address = reinterpret_cast<std::uintptr_t>(s.data.data());
    h.ticket = p.next_ticket++;
    s.ticket = h.ticket;
    fill_shared(h, s.data);
  } else {
    h.payload_tag =
        static_cast<std::int32_t>(p.next_payload_tag++ % static_cast<std::uint32_t>(shm::kPayloadTags));
    s.payload = payload.isend(p.rank, s.data, h.payload_tag);
    ++payloads_in_flight;
  }
  std::memcpy(slot, &h, sizeof h);
  store_release(p.out.written(), ++p.next_write);
  s.written = true;
  return true;
}

void ShmTransport::Impl::push(HostPeer& p) {
  while (!p.sends.empty() && write(p, *p.sends.front())) p.sends.pop_front();
}

// ---- set-up ----

namespace {

constexpr std::size_t kNameBytes = 96;

// The communicator's ranks on this host, in node-rank order.
std::vector<int> host_ranks(MPI_Comm comm, MPI_Comm node) {
  int rank = 0;
  int n = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(node, &n);
  std::vector<int> ranks(static_cast<std::size_t>(n));
  check_mpi(MPI_Allgather(&rank, 1, MPI_INT, ranks.data(), 1, MPI_INT, node), "MPI_Allgather (host ranks)");
  return ranks;
}

// True on every rank of `node` when `ok` holds on all of them.
bool all_ok(bool ok, MPI_Comm node) {
  int mine = ok ? 1 : 0;
  int all = 0;
  check_mpi(MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, node), "MPI_Allreduce (shared memory set-up)");
  return all == 1;
}

// Whether every rank of the host can read its peers' memory (Note [Direct reads]): each publishes its
// pid and the address of a word holding a value only it knows (its pid, mixed), and reads every
// peer's. A container's seccomp filter or Yama's ptrace_scope (1 and up) refuse process_vm_readv
// between sibling processes; then long messages keep MPI's path on the whole host. Records the pids.
bool probe_direct_reads(ShmTransport::Impl& m, const std::vector<int>& ranks, MPI_Comm node) {
  struct Probe {
    std::int64_t pid;
    std::uint64_t address;
  };
  constexpr std::uint64_t kMix = 0x9e3779b97f4a7c15ULL;
  const auto expected = [&](std::int64_t pid) { return static_cast<std::uint64_t>(pid) * kMix; };
  const std::int64_t me = getpid();
  const std::uint64_t cookie = expected(me);
  const Probe mine{me, reinterpret_cast<std::uintptr_t>(&cookie)};
  std::vector<Probe> all(ranks.size());
  check_mpi(MPI_Allgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, node),
            "MPI_Allgather (direct-read probe)");
  bool ok = true;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    HostPeer* p = m.host_peer(ranks[i]);
    if (p == nullptr) continue;  // this rank
    p->pid = static_cast<pid_t>(all[i].pid);
    std::uint64_t theirs = 0;
    iovec local{&theirs, sizeof theirs};
    iovec remote{reinterpret_cast<void*>(static_cast<std::uintptr_t>(all[i].address)), sizeof theirs};
    ok = ok && process_vm_readv(p->pid, &local, 1, &remote, 1, 0) == sizeof theirs &&
         theirs == expected(all[i].pid);
  }
  return all_ok(ok, node);  // also keeps `cookie` alive until every peer has read it
}

}  // namespace

ShmTransport::ShmTransport(MpiTransport& mpi, ShmLayout layout) : impl_(std::make_unique<Impl>(mpi, layout)) {
  if (layout.slot_bytes % kLine != 0 || layout.slots == 0)
    throw std::invalid_argument("ShmTransport: slot_bytes must be a multiple of 64 and slots at least 1");
  Impl& m = *impl_;
  m.peer_index.assign(static_cast<std::size_t>(mpi.size()), -1);
  MPI_Comm node = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(mpi.comm(), MPI_COMM_TYPE_SHARED, mpi.rank(), MPI_INFO_NULL, &node),
            "MPI_Comm_split_type");
  const std::vector<int> ranks = host_ranks(mpi.comm(), node);
  const std::size_t n = ranks.size();
  if (n > 1) {
    const std::size_t channel = Channel::bytes(layout);
    const std::size_t me =
        static_cast<std::size_t>(std::find(ranks.begin(), ranks.end(), mpi.rank()) - ranks.begin());
    // Make this rank's segment (a channel per sender), tell the host its name, map the others'.
    std::array<char, kNameBytes> mine{};
    const std::string name = fresh_shm_name("teetrain");
    std::snprintf(mine.data(), mine.size(), "%s", name.c_str());
    std::optional<ShmSegment> own = ShmSegment::create(name, n * channel, m.fallback);
    std::vector<char> names(n * kNameBytes);
    check_mpi(MPI_Allgather(mine.data(), kNameBytes, MPI_CHAR, names.data(), kNameBytes, MPI_CHAR, node),
              "MPI_Allgather (segment names)");
    std::vector<std::optional<ShmSegment>> mapped(n);
    bool ok = own.has_value();
    for (std::size_t i = 0; ok && i < n; ++i)
      if (i != me)
        ok = (mapped[i] = ShmSegment::open(&names[i * kNameBytes], n * channel, m.fallback)).has_value();
    const bool everyone = all_ok(ok, node);  // every peer has mapped this rank's segment, or gave up
    ShmSegment::unlink(name);
    if (everyone) {
      m.segments.push_back(std::move(*own));
      for (std::size_t i = 0; i < n; ++i) {
        if (i == me) continue;
        HostPeer p;
        p.rank = ranks[i];
        const std::size_t stride = kHeaderBytes + layout.slot_bytes;
        p.out = Channel{mapped[i]->data() + me * channel, stride, layout.slots};
        p.in = Channel{m.segments.front().data() + i * channel, stride, layout.slots};
        m.peer_index[static_cast<std::size_t>(ranks[i])] = static_cast<int>(m.peers.size());
        m.peers.push_back(std::move(p));
        m.segments.push_back(std::move(*mapped[i]));
      }
      m.fallback.clear();
    } else if (m.fallback.empty()) {
      m.fallback = "another rank on this host could not set up its shared memory segment";
    }
  }
  if (!m.peers.empty() && layout.direct_reads) m.direct = probe_direct_reads(m, ranks, node);
  MPI_Comm_free(&node);
  set_timeout(mpi.timeout());
  set_wait_policy(mpi.wait_policy());
}

ShmTransport::~ShmTransport() = default;

int ShmTransport::rank() const {
  return impl_->mpi.rank();
}
int ShmTransport::size() const {
  return impl_->mpi.size();
}
int ShmTransport::host_peers() const {
  return static_cast<int>(impl_->peers.size());
}
const ShmLayout& ShmTransport::layout() const {
  return impl_->layout;
}
bool ShmTransport::direct_reads() const {
  return impl_->direct;
}

const std::string& ShmTransport::fallback_reason() const {
  return impl_->fallback;
}

std::span<std::byte> ShmTransport::channel_bytes_to(int peer) {
  const HostPeer* p = impl_->host_peer(peer);
  if (p == nullptr) return {};
  return {p->out.base, Channel::bytes(impl_->layout)};
}

std::string ShmTransport::name() const {
  if (impl_->peers.empty()) return "mpi";
  return static_cast<int>(impl_->peers.size()) + 1 == size() ? "shm" : "shm+mpi";
}

Request ShmTransport::isend(int peer, std::span<const std::byte> data, int tag) {
  HostPeer* p = impl_->host_peer(peer);
  if (p == nullptr) return impl_->remote(impl_->mpi.isend(peer, data, tag));
  auto s = std::make_unique<SendState>(*impl_, *p, data, tag);
  if (!p->sends.empty() || !impl_->write(*p, *s)) p->sends.push_back(s.get());
  return Request(std::move(s), Op::Send, peer, tag, data.size());
}

Request ShmTransport::irecv(int peer, std::span<std::byte> buffer, int tag) {
  HostPeer* p = impl_->host_peer(peer);
  if (p == nullptr) return impl_->remote(impl_->mpi.irecv(peer, buffer, tag));
  return impl_->post_receive(*p, std::make_unique<RecvState>(*impl_, *p, buffer, tag));
}

Request ShmTransport::irecv_sum(int peer, std::span<float> acc, int tag) {
  HostPeer* p = impl_->host_peer(peer);
  if (p == nullptr) return Transport::irecv_sum(peer, acc, tag);
  return impl_->post_receive(
      *p, std::make_unique<RecvState>(*impl_, *p, std::as_writable_bytes(acc), tag, /*add=*/true));
}

bool ShmTransport::shared(const void* p, std::size_t bytes) const {
  return impl_->region_of(p, bytes) != nullptr;
}

bool ShmTransport::sums_on_receive(int peer) const {
  return impl_->host_peer(peer) != nullptr;
}

void ShmTransport::share(const SharedBuffer& b) {
  auto& shared = impl_->shared;
  if (std::none_of(shared.begin(), shared.end(), [&](const SharedRegion& r) { return r.base == b.data(); }))
    shared.push_back({b.data(), b.size(), b.fd(), b.id()});
}

void ShmTransport::unshare(const SharedBuffer& b) {
  std::erase_if(impl_->shared, [&](const SharedRegion& r) { return r.base == b.data(); });
}

Request ShmTransport::Impl::remote(Request r) {
  const Op op = r.op();
  const int peer = r.peer(), tag = r.tag();
  const std::size_t bytes = r.posted_bytes();
  return Request(std::make_unique<RemoteState>(*this, std::move(r)), op, peer, tag, bytes);
}

// Matches a new receive with a message that came first, or queues it.
Request ShmTransport::Impl::post_receive(HostPeer& hp, std::unique_ptr<RecvState> state) {
  auto* p = &hp;
  RecvState* r = state.get();
  const int tag = r->tag;
  const std::size_t bytes = r->buffer.size();
  const auto it = std::find_if(p->unexpected.begin(), p->unexpected.end(),
                               [&](const Unexpected& u) { return u.header.tag == tag; });
  if (it != p->unexpected.end()) {
    match(*p, *r, it->header, it->data.data());
    p->unexpected.erase(it);
  } else {
    p->recvs.push_back(r);
  }
  return Request(std::move(state), Op::Recv, p->rank, tag, bytes);
}

}  // namespace tt::comm
