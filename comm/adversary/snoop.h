// What an eavesdropper on the links between ranks learns (`--adversary snoop`): per link and kind of
// traffic, the messages, bytes, byte entropy, the first bytes, and how many 4-byte words decode as
// plausible gradient values. The adversary knows the public wire format (Kerckhoffs): it knows which
// trailing bytes of a sealed message are the clear header and which are ciphertext and tag.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace tt::comm {

enum class TrafficKind : std::uint8_t { Attestation, Gradients, Broadcast, Collectives, Other };
const char* traffic_name(TrafficKind k);
TrafficKind traffic_kind(int tag);

// What travels on the wire, as the adversary knows it from the protocol's public description.
struct WireFormat {
  bool sealed = false;            // TEE on: messages are ciphertext || tag || clear header
  std::size_t clear_trailer = 0;  // bytes of clear header at the end of every sealed message
  std::size_t tag_bytes = 0;      // authentication tag before it
};

// A float32 a gradient could plausibly hold: zero, or finite with 1e-12 <= |x| <= 10. Random bytes
// give about 17% (exponent fields 87..130 of 256); gradients in clear almost 100%.
bool plausible_gradient(float x);
inline constexpr double kRandomPlausible = 44.0 / 256.0;

// Statistics of one kind of traffic on one link (src -> dst).
struct TrafficStats {
  int src = 0;
  int dst = 0;
  TrafficKind kind = TrafficKind::Other;
  std::uint64_t messages = 0;
  std::uint64_t bytes = 0;                     // everything on the wire
  std::uint64_t body_bytes = 0;                // all but the clear header: ciphertext (sealed) or plaintext
  std::uint64_t values = 0;                    // 4-byte words of the bodies decoded as float32
  std::uint64_t plausible = 0;                 // of them, plausible gradients
  std::array<std::uint64_t, 256> histogram{};  // byte counts over the bodies
  std::array<std::uint8_t, 16> head{};         // first bytes of the first message
  std::uint32_t head_len = 0;
  std::array<float, 4> first_values{};  // the first message's first words as float32
  std::uint32_t first_count = 0;

  void add(std::span<const std::byte> message, const WireFormat& wire);
  void merge(const TrafficStats& o);  // same link and kind
  double entropy_bits() const;        // Shannon entropy of the bodies' bytes, bits per byte
  double plausible_fraction() const;
};

// Every link's statistics on one rank, optionally writing captures to a directory.
class SnoopLog {
 public:
  SnoopLog(WireFormat wire, std::filesystem::path capture_dir);
  void record(int src, int dst, int tag, std::span<const std::byte> message);
  const std::vector<TrafficStats>& stats() const { return stats_; }

  // Flat byte form for gathering the ranks' logs on rank 0, and back.
  static std::vector<std::byte> serialize(const std::vector<TrafficStats>& rows);
  static std::vector<TrafficStats> deserialize(std::span<const std::byte> bytes);

 private:
  void capture(int src, int dst, int tag, TrafficKind kind, std::span<const std::byte> message);

  WireFormat wire_;
  std::filesystem::path dir_;
  std::vector<TrafficStats> stats_;
  std::map<std::pair<int, int>, std::ofstream> index_;  // per link: one line per message
  std::map<std::pair<int, int>, std::uint64_t> seq_;
};

// The adversary's view, as rank 0 prints it: a table of every link and a verdict on whether the
// gradients were readable, which bytes travel in clear and why that is acceptable.
std::string render_snoop_report(const std::vector<TrafficStats>& rows, const WireFormat& wire);

}  // namespace tt::comm
