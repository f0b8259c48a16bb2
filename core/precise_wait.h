// precise_wait_until: the wait behind every emulated GPU cost (kernels, device crypto, CC transfers).
//
// A plain sleep wakes 50-100 us late, and much later when ranks share cores; on a chain of emulated
// kernels (a ring hop: seal, send, open, add) that lateness adds up to more than the work it stands
// for (fast's emulated gpt2 step at P = 4 on 2 cores: 34 ms with plain sleeps, 24 ms with this — the
// TEE-off step is 22 ms). So: sleep until shortly before the deadline, freeing the core, then yield in
// a short spin.
#pragma once
#include <chrono>
#include <thread>

namespace tt {

inline void precise_wait_until(std::chrono::steady_clock::time_point deadline) {
  using namespace std::chrono;
  constexpr auto kSpin = microseconds(200);
  if (steady_clock::now() + kSpin < deadline) std::this_thread::sleep_until(deadline - kSpin);
  while (steady_clock::now() < deadline) std::this_thread::yield();
}

}  // namespace tt
