// AdversaryTransport::report (comm/adversary/adversary_transport.h): the adversary's account at the end of a
// run that finished. A run an attack stopped never gets here; its verdict is the receiver's error.
#include <cstring>
#include <sstream>

#include "base/error.h"
#include "comm/adversary/adversary_transport.h"

namespace tt::comm {

namespace {

std::vector<std::byte> text_bytes(const std::string& s) {
  std::vector<std::byte> out(s.size());
  if (!s.empty()) std::memcpy(out.data(), s.data(), s.size());
  return out;
}

std::string bytes_text(const std::vector<std::byte>& b) {
  return b.empty() ? std::string() : std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

}  // namespace

std::vector<std::vector<std::byte>> AdversaryTransport::gather(std::vector<std::byte> mine) {
  std::vector<std::vector<std::byte>> all;
  if (rank() != 0) {
    std::uint64_t n = mine.size();
    Request a = inner_.isend(0, std::as_bytes(std::span(&n, 1)), tags::kAdversaryReport);
    Request b = inner_.isend(0, mine, tags::kAdversaryReport);
    inner_.wait(a);
    inner_.wait(b);
    return all;
  }
  all.push_back(std::move(mine));
  for (int r = 1; r < size(); ++r) {
    std::uint64_t n = 0;
    Request a = inner_.irecv(r, std::as_writable_bytes(std::span(&n, 1)), tags::kAdversaryReport);
    inner_.wait(a);
    if (n > (std::uint64_t{1} << 30))
      throw RunError("adversary report: rank " + std::to_string(r) + " sent a bad size");
    std::vector<std::byte> blob(n);
    Request b = inner_.irecv(r, blob, tags::kAdversaryReport);
    if (inner_.wait(b) != n) throw RunError("adversary report: short message from rank " + std::to_string(r));
    all.push_back(std::move(blob));
  }
  return all;
}

std::string AdversaryTransport::report() {
  std::vector<std::byte> mine;
  {
    std::lock_guard lock(mu_);
    if (snoop_) {
      mine = SnoopLog::serialize(snoop_->stats());
    } else {
      std::string text;
      if (rank() == spec_.link) text = "#sent " + std::to_string(gradient_sent_) + "\n";
      if (attacked_peer_) text += "#peer " + std::to_string(*attacked_peer_) + "\n";
      for (const auto& e : events_) text += "rank " + std::to_string(rank()) + ": " + e + "\n";
      if (relay_) text += "#relay " + relay_->summary() + "\n";
      mine = text_bytes(text);
    }
  }
  const auto blobs = gather(std::move(mine));
  if (rank() != 0) return "";
  if (!snoop_) return active_report(blobs);
  std::vector<TrafficStats> rows;
  for (const auto& b : blobs)
    for (auto& row : SnoopLog::deserialize(b)) rows.push_back(row);
  return render_snoop_report(rows, wire_);
}

std::string AdversaryTransport::active_report(const std::vector<std::vector<std::byte>>& blobs) const {
  std::ostringstream os;
  os << "== the adversary's report (" << describe(spec_, size(), route_) << ")\n";
  std::size_t fired = 0;
  std::string sent = "?";
  std::string relay;
  // The receiver of the attacked message where it went, else the ring successor.
  std::string victim = "rank " + std::to_string((spec_.link + 1) % size());
  for (const auto& b : blobs) {
    std::istringstream lines(bytes_text(b));
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("#sent ", 0) == 0) {
        sent = line.substr(6);
      } else if (line.rfind("#peer ", 0) == 0) {
        victim = "rank " + line.substr(6);
      } else if (line.rfind("#relay ", 0) == 0) {
        relay = line.substr(7);
      } else {
        os << "  " << line << "\n";
        ++fired;
      }
    }
  }
  if (fired == 0) {
    const std::string to = route_.peers.size() > 1 ? " to " + ranks_text(route_.peers)
                           : route_.peers.empty()  ? " -> " + victim.substr(5)
                                                   : " -> " + std::to_string(route_.peers.front());
    os << "the attack did not fire: the link" << (route_.peers.size() > 1 ? "s from" : "") << " rank "
       << spec_.link << to << " carried " << sent << " gradient message(s) from it; choose N within that\n";
  } else if (spec_.kind == AttackKind::Delay) {
    os << "the run finished: a delay changes no bytes, so there is nothing to detect; " << victim
       << " waited (a delay longer than --timeout stops the run, naming the rank it waited for)\n";
  } else if (spec_.kind == AttackKind::MitmRelay) {
    os << "the run finished and NOTHING DETECTED THE RELAY: with --attestation none no evidence ties a key "
          "to "
          "a device, so each rank agreed its link key with the relay, and the "
       << relay << "\n";
  } else if (!wire_.sealed) {
    os << "the run finished and NOTHING DETECTED THE ATTACK: with --tee off no one checks the bytes between "
          "ranks, so "
       << victim << " used what arrived as if rank " << spec_.link
       << " had sent it, and every replica applied the altered average\n";
  } else {
    os << "the run finished although the attack fired on sealed links: a detection failure; please report "
          "it with this output\n";
  }
  return os.str();
}

}  // namespace tt::comm
