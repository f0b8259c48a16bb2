#include "comm/transport/mpi_allreduce.h"

#include <algorithm>
#include <climits>

#include "comm/transport/mpi_transport.h"

namespace tt::comm {

void mpi_allreduce_sum(MPI_Comm comm, float* data, std::size_t count) {
  constexpr std::size_t kMaxPiece = static_cast<std::size_t>(INT_MAX);
  for (std::size_t off = 0; off < count; off += kMaxPiece) {
    const int n = static_cast<int>(std::min(kMaxPiece, count - off));
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, data + off, n, MPI_FLOAT, MPI_SUM, comm), "MPI_Allreduce");
  }
}

}  // namespace tt::comm
