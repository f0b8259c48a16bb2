// ShmTransport: ranks on one host exchange their messages through shared memory; ranks on other hosts
// through MPI, as before.
//
// Why: a small all-reduce is a few messages, and through MPI's point-to-point path each pays the
// library's matching, request and (under MPI_THREAD_MULTIPLE) locking, about a microsecond at P = 2
// on this project's reference VM, more than the copy itself. Here a message of up to `slot_bytes` is
// one copy into a slot of a single-producer, single-consumer queue that the receiving rank drains:
// no system call, no lock, two cache lines of control traffic.
//
// Note [Shared-memory channels]: every ordered pair of ranks on a host has one channel, which lives in
// the receiver's segment: a `written` counter that only the sender advances, a `read` counter that
// only the receiver advances (each on its own cache line), and `slots` slots of a 64-byte header and
// `slot_bytes` of payload. A message that fits is copied into one slot (inline). A longer one puts
// only its header in the slot: where the ranks may read each other's memory the receiver copies the
// bytes straight out of the sender's buffer (Note [Direct reads], shm_transport.cpp), else they travel
// as an MPI message (Open MPI's shared-memory transport then copies them once, process to process)
// under a tag that only this pair's payloads use. Because every header passes through the one channel
// in send order, matching stays in send order whichever way the bytes travel, which is the Transport
// contract (comm/transport.h). Headers that arrive before
// their receive is posted are kept aside (the payload too, when inline), so a sender never waits for
// the receiver to post. The sender publishes a slot with a release store of `written`, the receiver
// frees it with a release store of `read`: the matching acquire loads order the payload copies.
//
// Note [Shared buffers]: a long message read with process_vm_readv is one copy, and a reduce then
// reads that copy again to add it in: the same bytes cross memory twice more than the add needs. A
// buffer made as a SharedBuffer (comm/transport/shared_buffer.h) and shared with the transport (ScopedShare)
// lets the receiver map it, read-only, and add straight from the sender's memory (irecv_sum) or copy
// from it (irecv). The header of a direct message from such a buffer names it (memfd descriptor, inode
// number, extent); the receiver maps a buffer the first time it is named, keeps the last few mapped,
// and falls back to process_vm_readv where the host will not let it (the same access check, so rarely).
// The sender's side is Note [Direct reads]'s: its buffer stays untouched until the receiver is done.
// Only plaintext uses it: a rank that shares a buffer shows it to every process of its host's user
// that may read its memory anyway. A sum from anywhere else (inline, read, through MPI) is stored in a
// small buffer and added at once, so every host peer's messages can be summed on receipt.
//
// The channel's counters and headers are checked before use (comm/transport/shm_channel.h): a process that
// writes into them is reported as an IntegrityError naming the channel, never followed.
//
// Progress happens inside isend, irecv and polls, like MPI's; the threading contract is MpiTransport's
// (comm/transport/mpi_transport.h): one thread at a time.
//
// Note [Progress on both paths]: a rank with peers on other hosts has two paths, and each moves only
// when polled: the channels push the sends queued behind full slots and drain arrivals inside this
// transport's progress, MPI moves its TCP fragments and a rendezvous's data only inside MPI calls. So
// a poll of any request moves both: a request to or from another host (MPI's, wrapped) runs this
// transport's progress first, and while such a request is pending, progress gives MPI a call too.
// Otherwise a rank waiting for a host peer's message never sends the rest of a rendezvous to the next
// host, nor a rank waiting for another host's message the queued sends to its host peer, and a ring
// across two hosts stops with every rank waiting for its predecessor (seen with 1 MiB sealed segments
// between two emulated hosts: every run stopped in its first all-reduce).
#pragma once
#include <cstddef>
#include <memory>
#include <span>
#include <string>

#include "comm/transport/mpi_transport.h"
#include "comm/transport/shm_channel.h"

namespace tt::comm {

class ShmTransport final : public Transport {
 public:
  // Collective over `mpi`'s communicator. Each rank makes its segment and maps its host peers'. When
  // some rank on a host cannot (no space in /dev/shm), no rank of that host uses shared memory, and
  // fallback_reason() says why. `mpi` must outlive this transport.
  explicit ShmTransport(MpiTransport& mpi, ShmLayout layout = {});
  ~ShmTransport() override;
  ShmTransport(const ShmTransport&) = delete;
  ShmTransport& operator=(const ShmTransport&) = delete;

  int rank() const override;
  int size() const override;
  // "shm+mpi" (some peers on other hosts), "shm" (all on this host), "mpi" (none shares this host).
  std::string name() const override;
  Request isend(int peer, std::span<const std::byte> data, int tag) override;
  Request irecv(int peer, std::span<std::byte> buffer, int tag) override;
  // Note [Shared buffers]: every host peer's messages can be added on receipt, and sends from a
  // shared buffer are read in place by host peers that may map it.
  void share(const SharedBuffer& buffer) override;
  void unshare(const SharedBuffer& buffer) override;
  bool shared(const void* p, std::size_t bytes) const override;
  bool sums_on_receive(int peer) const override;
  Request irecv_sum(int peer, std::span<float> acc, int tag) override;

  int host_peers() const;  // other ranks reached through shared memory
  const ShmLayout& layout() const;
  const std::string& fallback_reason() const;  // empty unless set-up failed on some rank of this host
  // Long messages are read from the sender's memory (Note [Direct reads]): the layout asked for it and
  // every rank of the host could read its peers' memory.
  bool direct_reads() const;
  // The bytes of the channel this rank writes to `peer` (empty when `peer` is not reached through
  // shared memory): what any process of this host's user can map and overwrite, so the receiver
  // checks what it reads there (comm/transport/shm_channel.h). Tests overwrite it to see that checked.
  std::span<std::byte> channel_bytes_to(int peer);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace tt::comm
