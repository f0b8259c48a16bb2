// Include once per MPI test program (a test run under mpirun): MPI is initialised before the first
// test and finalised after the last, through a GoogleTest global environment.
#pragma once
#include <gtest/gtest.h>

#include <memory>

#include "comm/transport/mpi_transport.h"

namespace tt::comm::testing {

class MpiEnvironment : public ::testing::Environment {
 public:
  void SetUp() override { session_ = std::make_unique<MpiSession>(nullptr, nullptr); }
  void TearDown() override { session_.reset(); }

 private:
  std::unique_ptr<MpiSession> session_;
};

// gtest takes ownership of the environment (it deletes it after RUN_ALL_TESTS).
[[maybe_unused]] inline const ::testing::Environment* const kMpiEnv =
    ::testing::AddGlobalTestEnvironment(std::make_unique<MpiEnvironment>().release());

}  // namespace tt::comm::testing
