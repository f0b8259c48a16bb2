// The MPI_Allreduce baseline (`--allreduce mpi`): what our ring is measured against.
#pragma once
#include <mpi.h>

#include <cstddef>

namespace tt::comm {

// In-place element-wise sum of data[0, count) over every rank of `comm` (MPI_IN_PLACE, MPI_SUM).
// Counts above INT_MAX are done in pieces. Throws RunError if MPI reports an error (the communicator
// must have MPI_ERRORS_RETURN for that; MpiTransport::comm() does).
void mpi_allreduce_sum(MPI_Comm comm, float* data, std::size_t count);

}  // namespace tt::comm
