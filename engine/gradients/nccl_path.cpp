#include "engine/gradients/nccl_path.h"

#include "base/error.h"
#ifdef TEETRAIN_HAVE_CUDA
#include "comm/cuda/nccl_comm.h"
#endif

namespace tt {
namespace {
#ifdef TEETRAIN_HAVE_CUDA
class Impl final : public GradientPath {
 public:
  Impl(Backend& backend, MPI_Comm comm, std::chrono::milliseconds timeout)
      : backend_(backend), nccl_(comm, comm::cuda::NcclComm::kCurrentDevice, timeout) {}
  void sum(float* g, std::size_t n, long, int) override {
    backend_.synchronize();  // the bucket's gradients are produced on the backend's stream
    nccl_.allreduce_sum(g, n);
  }
  std::string describe() const override { return "ncclAllReduce"; }

 private:
  Backend& backend_;
  comm::cuda::NcclComm nccl_;
};
#endif
}  // namespace

std::unique_ptr<GradientPath> make_nccl_path(Backend& backend, MPI_Comm comm,
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
