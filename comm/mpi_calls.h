// The MPI calls comm/'s rooms share: an MPI error as a RunError, and the matched probe that every
// receive of ours from MPI goes through (Note [Sizes before receives], comm/transport.h) — the
// transport's (comm/transport/mpi_transport.cpp) and the failure notices' (comm/secure/first_failure.cpp).
#pragma once
#include <mpi.h>

#include <cstddef>
#include <optional>
#include <string>

namespace tt::comm {

// Throws tt::RunError with MPI's error string when rc != MPI_SUCCESS.
void check_mpi(int rc, const std::string& what);

// A message a matched probe took off MPI's queue: no receive can match it any more, and none of its
// bytes has been received yet. Note [Sizes before receives]: receive it (MPI_Imrecv / MPI_Mrecv on
// `handle`) only into a buffer of at least `bytes`; a message refused is left as it is (MPI holds what
// arrived of it until the process ends, and its sender's request never completes).
struct ProbedMessage {
  MPI_Message handle = MPI_MESSAGE_NULL;
  int source = MPI_PROC_NULL;
  int tag = 0;
  std::size_t bytes = 0;  // its size; more than MPI's int counts can name is refused by every receive
};

// MPI_Improbe for a message from `source` with `tag` on `comm` (wildcards allowed), and its size in
// bytes; nullopt when none has arrived. Throws RunError when MPI fails.
std::optional<ProbedMessage> probe_message(MPI_Comm comm, int source, int tag);

}  // namespace tt::comm
