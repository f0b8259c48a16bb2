#include "comm/transport/mpi_tool_vars.h"

#include <mpi.h>

#include <array>
#include <cstring>
#include <vector>

namespace tt::comm {
namespace {

constexpr std::size_t kMaxString = 1 << 16;  // Open MPI declares 2048 bytes for a string variable

// The tool interface for one lookup: MPI_T_init_thread and MPI_T_finalize nest, so each lookup may
// open and close its own session, before or after MPI_Init.
class ToolSession {
 public:
  ToolSession() {
    int provided = 0;
    ok_ = MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) == MPI_SUCCESS;
  }
  ~ToolSession() {
    if (ok_) MPI_T_finalize();
  }
  ToolSession(const ToolSession&) = delete;
  ToolSession& operator=(const ToolSession&) = delete;
  bool ok() const { return ok_; }

 private:
  bool ok_ = false;
};

struct Found {
  int index = -1;
  MPI_Datatype type = MPI_DATATYPE_NULL;
};

// The variable's index and type, bound to no MPI object (an eager limit is per process).
std::optional<Found> find(const std::string& name) {
  int count = 0;
  if (MPI_T_cvar_get_num(&count) != MPI_SUCCESS) return std::nullopt;
  for (int i = 0; i < count; ++i) {
    std::array<char, 256> got{};
    int got_len = static_cast<int>(got.size());
    int verbosity = 0, bind = 0, scope = 0, desc_len = 0;
    MPI_Datatype type = MPI_DATATYPE_NULL;
    MPI_T_enum enumtype = MPI_T_ENUM_NULL;
    if (MPI_T_cvar_get_info(i, got.data(), &got_len, &verbosity, &type, &enumtype, nullptr, &desc_len, &bind,
                            &scope) != MPI_SUCCESS)
      continue;
    if (bind == MPI_T_BIND_NO_OBJECT && name == got.data()) return Found{i, type};
  }
  return std::nullopt;
}

// Reads the variable at `index` into `out` (at least `bytes` long); false when MPI refuses.
bool read(int index, void* out, std::size_t bytes) {
  MPI_T_cvar_handle handle = MPI_T_CVAR_HANDLE_NULL;
  int elements = 0;
  if (MPI_T_cvar_handle_alloc(index, nullptr, &handle, &elements) != MPI_SUCCESS) return false;
  bool ok = false;
  if (elements >= 1 && static_cast<std::size_t>(elements) <= bytes)
    ok = MPI_T_cvar_read(handle, out) == MPI_SUCCESS;
  MPI_T_cvar_handle_free(&handle);
  return ok;
}

}  // namespace

std::optional<std::uint64_t> mpi_control_uint(const std::string& name) {
  const ToolSession session;
  if (!session.ok()) return std::nullopt;
  const std::optional<Found> f = find(name);
  if (!f) return std::nullopt;
  if (f->type == MPI_UNSIGNED_LONG || f->type == MPI_UNSIGNED_LONG_LONG || f->type == MPI_COUNT) {
    std::uint64_t v = 0;
    return read(f->index, &v, 1) ? std::optional<std::uint64_t>(v) : std::nullopt;
  }
  if (f->type == MPI_INT || f->type == MPI_UNSIGNED) {
    int v = 0;
    if (!read(f->index, &v, 1) || v < 0) return std::nullopt;
    return static_cast<std::uint64_t>(v);
  }
  return std::nullopt;  // a double or a string: not a count
}

std::optional<std::string> mpi_control_string(const std::string& name) {
  const ToolSession session;
  if (!session.ok()) return std::nullopt;
  const std::optional<Found> f = find(name);
  if (!f || f->type != MPI_CHAR) return std::nullopt;
  std::vector<char> v(kMaxString + 1, '\0');  // MPI_T gives a string's buffer size as its element count
  if (!read(f->index, v.data(), kMaxString)) return std::nullopt;
  return std::string(v.data());
}

}  // namespace tt::comm
