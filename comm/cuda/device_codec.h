// DeviceCodec: the GPU counterpart of comm::Channel (comm/channel.h) — seals and opens ring messages
// whose plaintext and wire bytes live in DEVICE memory.
//
// TEE off: PlainDeviceCodec (pass-through; the device ring sends from and receives into user memory,
// no copies). TEE `fast`: a sealing codec over the GPU AES-GCM (tee/cuda) with the same contexts and
// nonces as the CPU SealedChannel, so CPU and GPU runs seal identical messages.
//
// Contract for implementations:
// - seal_batch / open_batch are BLOCKING with respect to the host: they may enqueue work on their own
//   stream, but when they return the outputs are complete in device memory (the ring hands a sealed
//   wire buffer straight to a send). The ring guarantees the inputs are complete before the call.
// - Job::out of a seal holds plain_bytes + overhead() bytes; Job::in of an open holds
//   plain_bytes + overhead() bytes and Job::out plain_bytes. All pointers are device pointers (null
//   when plain_bytes + overhead is 0).
// - open_batch verifies every job before any plaintext is used and throws (tt::RunError, or
//   tee::IntegrityError for a failed tag) naming to_string(ctx) of the first failed job. The context
//   is the one the RECEIVER expects (built from its own ring position), never read from the wire.
// - seal draws the nonce: never seal one message twice.
#pragma once
#include <cstddef>
#include <span>
#include <string>

#include "comm/channel.h"

namespace tt::comm::cuda {

class DeviceCodec {
 public:
  DeviceCodec() = default;
  virtual ~DeviceCodec() = default;
  DeviceCodec(const DeviceCodec&) = delete;
  DeviceCodec& operator=(const DeviceCodec&) = delete;

  virtual std::string name() const = 0;
  virtual std::size_t overhead() const = 0;  // 0 plain, 16 for AES-GCM
  virtual bool pass_through() const = 0;     // wire == plaintext: the ring skips seal/open entirely

  struct Job {
    MessageContext ctx;
    const std::byte* in;  // device: plaintext (seal) or wire (open)
    std::byte* out;       // device: wire (seal) or plaintext (open)
    std::size_t plain_bytes;
  };
  // How many segments the ring hands over per batch (a GPU codec wants many at once; 1 keeps the
  // finest send/seal overlap).
  virtual std::size_t parallelism() const { return 1; }
  virtual void seal_batch(std::span<const Job> jobs) = 0;
  virtual void open_batch(std::span<const Job> jobs) = 0;
};

// TEE off. seal/open are device-to-device copies (the ring never calls them: pass_through()).
class PlainDeviceCodec final : public DeviceCodec {
 public:
  std::string name() const override { return "plain"; }
  std::size_t overhead() const override { return 0; }
  bool pass_through() const override { return true; }
  void seal_batch(std::span<const Job> jobs) override;
  void open_batch(std::span<const Job> jobs) override;
};

}  // namespace tt::comm::cuda
