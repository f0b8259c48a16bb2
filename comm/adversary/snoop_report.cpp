// render_snoop_report (comm/adversary/snoop.h): the adversary's view as a table and a verdict.
#include <cstdio>
#include <sstream>
#include <string>

#include "comm/adversary/snoop.h"

namespace tt::comm {

namespace {

std::string human_bytes(std::uint64_t b) {
  char s[32];
  if (b >= (1u << 20)) {
    std::snprintf(s, sizeof s, "%.1f MiB", static_cast<double>(b) / (1 << 20));
  } else if (b >= 1024) {
    std::snprintf(s, sizeof s, "%.1f KiB", static_cast<double>(b) / 1024);
  } else {
    std::snprintf(s, sizeof s, "%llu B", static_cast<unsigned long long>(b));
  }
  return s;
}

std::string hex_head(const TrafficStats& s, std::size_t n) {
  std::string out;
  char b[4];
  for (std::size_t i = 0; i < std::min<std::size_t>(n, s.head_len); ++i) {
    std::snprintf(b, sizeof b, "%02x", s.head[i]);
    out += b;
  }
  return out.empty() ? "-" : out;
}

std::string first_values(const TrafficStats& s) {
  std::string out;
  char b[24];
  for (std::uint32_t i = 0; i < std::min<std::uint32_t>(3, s.first_count); ++i) {
    std::snprintf(b, sizeof b, "%s%.3g", i ? " " : "", static_cast<double>(s.first_values[i]));
    out += b;
  }
  return out.empty() ? "-" : out;
}

TrafficStats total_of(const std::vector<TrafficStats>& rows, TrafficKind kind) {
  TrafficStats t;
  t.kind = kind;
  for (const auto& r : rows)
    if (r.kind == kind) t.merge(r);
  return t;
}

void verdict(std::ostringstream& os, const std::vector<TrafficStats>& rows, const WireFormat& wire) {
  const TrafficStats g = total_of(rows, TrafficKind::Gradients);
  char line[512];
  if (g.values == 0) {
    os << "verdict: no gradient traffic crossed the links\n";
  } else if (!wire.sealed) {
    std::snprintf(line, sizeof line,
                  "verdict: gradients READABLE: %.1f%% of %llu values on the wire decode as plausible "
                  "gradients (random bytes would give ~%.0f%%); byte entropy %.3f bits/byte\n",
                  100.0 * g.plausible_fraction(), static_cast<unsigned long long>(g.values),
                  100.0 * kRandomPlausible, g.entropy_bits());
    os << line
       << "in clear: everything. The gradients (from which training data can be reconstructed), the initial "
          "parameter broadcast (the model itself) and every control message.\n";
  } else {
    std::snprintf(line, sizeof line,
                  "verdict: gradients unreadable: %.1f%% of %llu values decode as plausible gradients, what "
                  "random bytes give (~%.0f%%); byte entropy %.4f bits/byte over %s of ciphertext and tags "
                  "(8 is the maximum)\n",
                  100.0 * g.plausible_fraction(), static_cast<unsigned long long>(g.values),
                  100.0 * kRandomPlausible, g.entropy_bits(), human_bytes(g.body_bytes).c_str());
    os << line << "in clear: the last " << wire.clear_trailer
       << " bytes of every sealed message (be32 key epoch, be64 nonce counter). They are diagnostic only: "
          "the receiver opens each message with the epoch and counter it expects from its own count, so "
          "editing them cannot make a message acceptable; they reveal how many messages a stream carried, "
          "which the message count on the wire reveals anyway.\n"
          "also visible to anyone on the wire: who talks to whom, when, and how much (message sizes give "
          "away the bucket layout): traffic analysis, which a TEE does not hide; and the attestation "
          "handshake (nonces, certificates, measurements, public keys, and the status round in which every "
          "rank reports its measurement, the device identities it knows and its verdict), public by design: "
          "it proves, it does not hide.\n";
  }
}

}  // namespace

std::string render_snoop_report(const std::vector<TrafficStats>& rows, const WireFormat& wire) {
  std::ostringstream os;
  os << "== the adversary's view (snoop, " << (wire.sealed ? "TEE on: sealed links" : "TEE off: plain links")
     << "): what crossed each link\n";
  char line[512];
  std::snprintf(line, sizeof line, "%-8s %-12s %9s %10s %9s %10s  %-18s %s\n", "link", "traffic", "messages",
                "bytes", "entropy", "plausible", "first bytes (hex)", "first values as float32");
  os << line;
  for (const auto& r : rows) {
    const std::string link = std::to_string(r.src) + " -> " + std::to_string(r.dst);
    char plaus[16] = "-";
    if (r.values > 0) std::snprintf(plaus, sizeof plaus, "%.1f%%", 100.0 * r.plausible_fraction());
    std::snprintf(line, sizeof line, "%-8s %-12s %9llu %10s %9.3f %10s  %-18s %s\n", link.c_str(),
                  traffic_name(r.kind), static_cast<unsigned long long>(r.messages),
                  human_bytes(r.bytes).c_str(), r.entropy_bits(), plaus, hex_head(r, 8).c_str(),
                  first_values(r).c_str());
    os << line;
  }
  os << "(entropy: bits per byte of the message bodies; plausible: 4-byte words that decode as a float32 "
        "gradient, i.e. zero or 1e-12 <= |x| <= 10)\n";
  verdict(os, rows, wire);
  return os.str();
}

}  // namespace tt::comm
