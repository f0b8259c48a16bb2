// The ring's segment size: --segment-kb, or (0, the default) one that suits the transport between the
// ranks.
//
// Note [Ring segments under the eager limit]: Open MPI sends a message no longer than its transport's
// eager limit (MPI's header included) at once; a longer one waits for the receiver's clear-to-send.
// Over TCP that handshake travels behind the other direction's data on the one connection between two
// ranks: a ring of 1 MiB segments between two hosts ran at 0.69-0.71 of the same ring with eager sends
// (docs/reproducing.md, "Validating the emulator", (c)). Between hosts the automatic segment therefore
// fits the TCP eager limit as MPI reports it (comm/transport/mpi_tool_vars.h), so that a raised limit
// (`--mca btl_tcp_eager_limit`) raises the segment with it. Within a host, shared memory's rendezvous
// is one copy and a few microseconds: 1 MiB segments. Ranks must cut the same segments, so the limit is
// agreed (the smallest over ranks): two hosts may have been given different limits.
#pragma once
#include <mpi.h>

#include <cstddef>
#include <string>

namespace tt {

// The link a hop may cross, as this rank sees it (local_link) or as the ranks agreed on it
// (agreed_link). Default: ranks in one process (tests, tools), where nothing has an eager limit.
struct LinkFacts {
  bool across_hosts = false;        // some rank runs on another host
  std::size_t eager_limit = 0;      // MPI's eager limit for that link, header included (0: none known)
  std::string name = "in-process";  // "TCP", "shared memory", "emulated"
  // Open MPI's TCP transport between hosts: a rendezvous message's go-ahead shares the byte stream of
  // its receiver's own data (Note [Rendezvous turns], comm/allreduce/allreduce_cost.h).
  bool rendezvous_turns() const { return across_hosts && eager_limit > 0; }
};

// Bytes of MPI's own header within its eager limit (Open MPI's ob1 match header, rounded up: a payload
// this much under the limit was measured to go eagerly over shared memory and TCP).
inline constexpr std::size_t kMpiHeaderBytes = 64;
inline constexpr std::size_t kDefaultSegmentBytes = std::size_t{1} << 20;

// What this rank's MPI says (no collective): across_hosts when its host holds fewer than `world`
// ranks; the eager limit of the transport between them: TCP's (btl_tcp_eager_limit) across hosts,
// shared memory's (btl_vader_eager_limit, btl_sm_eager_limit) within one, none when Open MPI was told
// to use another point-to-point layer than ob1. `emulated_links`: the ring's messages are modelled,
// not MPI's. `shm_inline_bytes`: within one host, the longest message ShmTransport sends without a
// handshake (comm/transport/shm_transport.h; 0: the ranks talk through MPI), which then stands for the limit.
LinkFacts local_link(int ranks_on_host, int world, bool emulated_links, std::size_t shm_inline_bytes = 0);
// The same agreed over the ranks of `comm` (the smallest eager limit: hosts may have been launched
// with different limits): collective. Every rank then cuts the same segments and prices messages
// alike (Note [same algorithm on every rank], engine/gradients/allreduce_selection.h).
LinkFacts agreed_link(const LinkFacts& mine, MPI_Comm comm);

struct SegmentPick {
  std::size_t bytes = 0;  // payload per segment (a whole number of 64-byte lines)
  std::string why;        // for the run's description: "1024 KiB (--segment-kb)", ...
};
// --segment-kb `segment_kb` (0: automatic) on an agreed transport. An automatic segment leaves room
// for a sealed message's header and tag whatever the channel, so that plaintext and sealed rings cut
// the same segments.
SegmentPick pick_segment(int segment_kb, const LinkFacts& t);

}  // namespace tt
