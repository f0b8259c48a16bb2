#include "engine/nccl_allreduce.h"

#include "base/error.h"
#ifdef TEETRAIN_HAVE_CUDA
#include "comm/cuda/nccl_comm.h"
#endif

namespace tt {
namespace {
#ifdef TEETRAIN_HAVE_CUDA
class Impl final : public NcclAllreduce {
 public:
  Impl(Backend& backend, MPI_Comm comm, std::chrono::milliseconds timeout)
      : backend_(backend), nccl_(comm, comm::cuda::NcclComm::kCurrentDevice, timeout) {}
  AllreduceFn fn() override {
    return [this](float* g, std::size_t n, long, int) {
      backend_.synchronize();  // the bucket's gradients are produced on the backend's stream
      nccl_.allreduce_sum(g, n);
    };
  }

 private:
  Backend& backend_;
  comm::cuda::NcclComm nccl_;
};
#endif
}  // namespace

std::unique_ptr<NcclAllreduce> make_nccl_allreduce(Backend& backend, MPI_Comm comm,
                                                   std::chrono::milliseconds timeout) {
#ifdef TEETRAIN_HAVE_CUDA
  if (backend.kind() != DeviceKind::Cuda) throw InputError("--allreduce nccl needs --device cuda");
  return std::make_unique<Impl>(backend, comm, timeout);
#else
  (void)backend;
  (void)comm;
  (void)timeout;
  throw InputError(
      "--allreduce nccl: this teetrain was built without CUDA/NCCL; use --allreduce ring or mpi");
#endif
}

}  // namespace tt
