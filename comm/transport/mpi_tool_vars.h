// MPI's control variables through the MPI tool interface (MPI_T, MPI 3.0): what the MPI library was
// told at launch (`--mca btl_tcp_eager_limit N`, OMPI_MCA_* variables, its defaults). The ring reads
// the transports' eager limits here instead of assuming them (Note [Ring segments under the eager
// limit], engine/run/host_layout.h).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace tt::comm {

// The integer control variable `name` (e.g. "btl_tcp_eager_limit"), or nullopt when this MPI does not
// have it (another MPI, a component that was not opened) or the interface is unavailable.
std::optional<std::uint64_t> mpi_control_uint(const std::string& name);
// The string control variable `name` (e.g. "pml"), or nullopt as above.
std::optional<std::string> mpi_control_string(const std::string& name);

}  // namespace tt::comm
