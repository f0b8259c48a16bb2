#include "comm/adversary/snoop.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <type_traits>

#include "base/error.h"
#include "comm/transport.h"

namespace tt::comm {

const char* traffic_name(TrafficKind k) {
  switch (k) {
    case TrafficKind::Attestation:
      return "attestation";
    case TrafficKind::Gradients:
      return "gradients";
    case TrafficKind::Broadcast:
      return "broadcast";
    case TrafficKind::Collectives:
      return "collectives";
    case TrafficKind::Other:
      return "other";
  }
  return "other";
}

TrafficKind traffic_kind(int tag) {
  if (tag == tags::kRing) return TrafficKind::Gradients;
  if (tag == tags::kBroadcast) return TrafficKind::Broadcast;
  if (tag == tags::kBarrier || tag == tags::kAllgather) return TrafficKind::Collectives;
  if (tag >= tags::kAttestFirst && tag <= tags::kAttestLast) return TrafficKind::Attestation;
  return TrafficKind::Other;
}

bool plausible_gradient(float x) {
  const float a = std::fabs(x);
  return x == 0.0f || (std::isfinite(a) && a >= 1e-12f && a <= 10.0f);
}

void TrafficStats::add(std::span<const std::byte> m, const WireFormat& wire) {
  const std::size_t trailer = wire.sealed ? std::min(m.size(), wire.clear_trailer) : 0;
  const std::span<const std::byte> body = m.first(m.size() - trailer);
  if (messages == 0) {
    head_len = static_cast<std::uint32_t>(std::min<std::size_t>(head.size(), m.size()));
    if (head_len > 0) std::memcpy(head.data(), m.data(), head_len);
    first_count = static_cast<std::uint32_t>(std::min<std::size_t>(first_values.size(), body.size() / 4));
    if (first_count > 0) std::memcpy(first_values.data(), body.data(), first_count * sizeof(float));
  }
  ++messages;
  bytes += m.size();
  body_bytes += body.size();
  for (std::byte b : body) ++histogram[static_cast<std::uint8_t>(b)];
  // The words a receiver would read as gradients: the plaintext, or what stands in its place.
  const std::size_t words = (body.size() - (wire.sealed ? std::min(body.size(), wire.tag_bytes) : 0)) / 4;
  for (std::size_t i = 0; i < words; ++i) {
    float x;
    std::memcpy(&x, body.data() + 4 * i, sizeof x);
    plausible += plausible_gradient(x) ? 1 : 0;
  }
  values += words;
}

void TrafficStats::merge(const TrafficStats& o) {
  if (messages == 0) {
    head = o.head;
    head_len = o.head_len;
    first_values = o.first_values;
    first_count = o.first_count;
  }
  messages += o.messages;
  bytes += o.bytes;
  body_bytes += o.body_bytes;
  values += o.values;
  plausible += o.plausible;
  for (std::size_t i = 0; i < histogram.size(); ++i) histogram[i] += o.histogram[i];
}

double TrafficStats::entropy_bits() const {
  double h = 0;
  for (std::uint64_t c : histogram) {
    if (c == 0) continue;
    const double p = static_cast<double>(c) / static_cast<double>(body_bytes);
    h -= p * std::log2(p);
  }
  return h;
}

double TrafficStats::plausible_fraction() const {
  return values == 0 ? 0.0 : static_cast<double>(plausible) / static_cast<double>(values);
}

SnoopLog::SnoopLog(WireFormat wire, std::filesystem::path capture_dir)
    : wire_(wire), dir_(std::move(capture_dir)) {
  if (dir_.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec)
    throw InputError("--adversary snoop:" + dir_.string() + ": cannot create the directory (" + ec.message() +
                     "); name a writable one");
}

void SnoopLog::record(int src, int dst, int tag, std::span<const std::byte> message) {
  const TrafficKind kind = traffic_kind(tag);
  auto it = std::find_if(stats_.begin(), stats_.end(), [&](const TrafficStats& s) {
    return s.src == src && s.dst == dst && s.kind == kind;
  });
  if (it == stats_.end()) {
    stats_.push_back(TrafficStats{.src = src, .dst = dst, .kind = kind});
    it = stats_.end() - 1;
  }
  const bool first_of_kind = it->messages == 0;
  it->add(message, wire_);
  if (!dir_.empty()) {
    capture(src, dst, tag, kind, message);
    if (first_of_kind) {
      // The first message of each kind, raw, for `od -f` / numpy: what the adversary could decode.
      std::ofstream raw(dir_ / ("link_" + std::to_string(src) + "_to_" + std::to_string(dst) + "_" +
                                traffic_name(kind) + "_first.bin"),
                        std::ios::binary);
      raw.write(reinterpret_cast<const char*>(message.data()), static_cast<std::streamsize>(message.size()));
    }
  }
}

// One line per message: sequence number, kind, tag, bytes, and the first 16 bytes in hex.
void SnoopLog::capture(int src, int dst, int tag, TrafficKind kind, std::span<const std::byte> message) {
  const auto key = std::make_pair(src, dst);
  auto [it, fresh] = index_.try_emplace(key);
  if (fresh) {
    it->second.open(dir_ / ("link_" + std::to_string(src) + "_to_" + std::to_string(dst) + ".tsv"));
    it->second << "seq\tkind\ttag\tbytes\tfirst_bytes_hex\n";
  }
  std::ostringstream hex;
  for (std::size_t i = 0; i < std::min<std::size_t>(16, message.size()); ++i) {
    char b[3];
    std::snprintf(b, sizeof b, "%02x", static_cast<unsigned>(message[i]));
    hex << b;
  }
  it->second << ++seq_[key] << '\t' << traffic_name(kind) << '\t' << tag << '\t' << message.size() << '\t'
             << hex.str() << '\n';
}

static_assert(std::is_trivially_copyable_v<TrafficStats>, "gathered between ranks as raw bytes");

std::vector<std::byte> SnoopLog::serialize(const std::vector<TrafficStats>& rows) {
  std::vector<std::byte> out(rows.size() * sizeof(TrafficStats));
  if (!rows.empty()) std::memcpy(out.data(), rows.data(), out.size());  // trivially copyable, same binary
  return out;
}

std::vector<TrafficStats> SnoopLog::deserialize(std::span<const std::byte> bytes) {
  if (bytes.size() % sizeof(TrafficStats) != 0)
    throw RunError("adversary report: a rank sent " + std::to_string(bytes.size()) + " bytes of statistics");
  std::vector<TrafficStats> rows(bytes.size() / sizeof(TrafficStats));
  if (!rows.empty()) std::memcpy(rows.data(), bytes.data(), bytes.size());
  return rows;
}

}  // namespace tt::comm
