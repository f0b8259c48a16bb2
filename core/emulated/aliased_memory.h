// AliasedMemory: address space without memory, for emulated GPUs. Every allocation is a fresh range
// of virtual addresses made of repeated mappings of one shared block (a memfd of `block_bytes`,
// rounded to pages), so a 1.5B-parameter model's parameters, gradients, optimizer state and
// activations cost one block of physical memory per rank, while the ring and the crypto still touch
// every byte of a gradient bucket at full cost.
//
// The block holds zeros and must keep holding them: zero is the only value that stays put when
// aliased copies of one float are summed, scaled and sealed again and again. EmulatedBackend therefore
// never writes a host value into it (its copies to the device and fills are costs, not stores); what
// still writes are sums of zeros (the ring) and copies of zeros (a broadcast).
#pragma once
#include <cstddef>
#include <map>
#include <mutex>

namespace tt {

class AliasedMemory {
 public:
  explicit AliasedMemory(std::size_t block_bytes);
  ~AliasedMemory();
  AliasedMemory(const AliasedMemory&) = delete;
  AliasedMemory& operator=(const AliasedMemory&) = delete;

  // A range of at least `bytes` (page-aligned, reading zeros); throws RunError if the kernel refuses.
  void* allocate(std::size_t bytes);
  void deallocate(void* p) noexcept;
  std::size_t block_bytes() const { return block_; }

 private:
  [[noreturn]] void fail(const char* what, std::size_t bytes) const;
  std::size_t page_;
  std::size_t block_;
  int fd_ = -1;
  std::mutex mu_;
  std::map<void*, std::size_t> ranges_;  // base -> mapped length
};

}  // namespace tt
