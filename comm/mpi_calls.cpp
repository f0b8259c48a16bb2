#include "comm/mpi_calls.h"

#include "base/error.h"

namespace tt::comm {

void check_mpi(int rc, const std::string& what) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  throw RunError(what + " failed: " + std::string(msg, static_cast<std::size_t>(len)));
}

std::optional<ProbedMessage> probe_message(MPI_Comm comm, int source, int tag) {
  int flag = 0;
  MPI_Status status;
  ProbedMessage m;
  // A probe that finds nothing gives MPI a turn, which may bring the message: a second look finds it
  // now rather than a poll later (what a receive posted up front saves on small messages).
  for (int look = 0; look < 2 && flag == 0; ++look)
    check_mpi(MPI_Improbe(source, tag, comm, &flag, &m.handle, &status), "MPI_Improbe");
  if (flag == 0) return std::nullopt;
  int count = 0;
  check_mpi(MPI_Get_count(&status, MPI_BYTE, &count), "MPI_Get_count");
  MPI_Count bytes = count;
  // Past INT_MAX MPI_Get_count says MPI_UNDEFINED; the _x form counts those.
  if (count == MPI_UNDEFINED) check_mpi(MPI_Get_elements_x(&status, MPI_BYTE, &bytes), "MPI_Get_elements_x");
  m.source = status.MPI_SOURCE;
  m.tag = status.MPI_TAG;
  m.bytes = static_cast<std::size_t>(bytes);
  return m;
}

}  // namespace tt::comm
