// A request that is complete as soon as it is posted: a buffered send (the in-process mailboxes copy the
// bytes when the send is posted) or one the adversary swallowed (the sender must see it complete).
#pragma once
#include <cstddef>
#include <optional>

#include "comm/transport.h"

namespace tt::comm {

class CompletedRequest final : public RequestState {
 public:
  explicit CompletedRequest(std::size_t bytes) : bytes_(bytes) {}
  std::optional<std::size_t> poll() override { return bytes_; }

 private:
  std::size_t bytes_;  // what the poster is told moved
};

}  // namespace tt::comm
