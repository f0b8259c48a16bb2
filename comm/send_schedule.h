// SendSchedule: the one question the hop runner asks of its channel and its memory (hop_runner.h):
// when may a hop's outgoing segments go out?
#pragma once
#include <algorithm>
#include <cstdint>

namespace tt::comm {

// Note [Eager sends]: a hop's outgoing segments may all be posted as the hop starts only when they are
// ready then and the transport takes any grouping: the channel passes user memory through untouched and
// models no cost per message, the memory models no device work that must precede a send (an emulated
// GPU's adds, whose waits would otherwise be skipped), and receives are not windowed. Each of the
// channel and the memory says which schedule it needs; the ring runs the stricter of the two
// (send_schedule in hop_runner.h). Relied on by HopRunner (hop_runner.cpp), the emulated platform's
// device channel and ring memory (platform/emulated/) and the device ring (cuda/device_ring.h).
enum class SendSchedule : std::uint8_t {
  // Every send of a hop posted as it starts, every receive before them; plaintext reduce receives
  // cycle through segment slots, and a fused hop sends each segment as it is added in.
  Eager = 0,
  // Each window's sends after its seal (or its modelled cost) and after the adds before it.
  InOrder = 1,
  // InOrder, and each window's receives posted right before its sends (Note [Posting receives],
  // reduce_memory.h): what NCCL's matched groups need.
  Windowed = 2,
};

// The stricter of two schedules: a ring runs what both its channel and its memory allow.
inline SendSchedule stricter(SendSchedule a, SendSchedule b) {
  return std::max(a, b);
}

}  // namespace tt::comm
