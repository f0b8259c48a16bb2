#include "comm/adversary_transport.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <sstream>
#include <thread>

#include "base/error.h"
#include "comm/secure_session.h"
#include "tee/attestation.h"
#include "tee/vendor.h"
#include "tee/x509.h"

namespace tt::comm {

namespace {

// A send the adversary swallowed: the sender sees it complete at once.
class CompletedSend final : public RequestState {
 public:
  explicit CompletedSend(std::size_t n) : n_(n) {}
  std::optional<std::size_t> poll() override { return n_; }

 private:
  std::size_t n_;
};

// A send of the adversary's own copy of the bytes (the caller's buffer is never touched). Reports
// `reported` bytes, what the caller posted, so the sender cannot tell.
class CopiedSend final : public RequestState {
 public:
  CopiedSend(Transport& t, std::vector<std::byte> bytes, int peer, int tag, std::size_t reported)
      : t_(t), bytes_(std::move(bytes)), inner_(t.isend(peer, bytes_, tag)), reported_(reported) {}
  std::optional<std::size_t> poll() override {
    return t_.test(inner_) ? std::optional<std::size_t>(reported_) : std::nullopt;
  }

 private:
  Transport& t_;
  std::vector<std::byte> bytes_;  // declared before inner_: alive until the inner send is gone
  Request inner_;
  std::size_t reported_;
};

// Two sends that complete as one (reorder: this message, then the held one behind it).
class PairedSend final : public RequestState {
 public:
  PairedSend(Transport& t, Request first, Request second, std::size_t n)
      : t_(t), first_(std::move(first)), second_(std::move(second)), n_(n) {}
  std::optional<std::size_t> poll() override {
    const bool a = t_.test(first_);
    const bool b = t_.test(second_);
    return a && b ? std::optional<std::size_t>(n_) : std::nullopt;
  }

 private:
  Transport& t_;
  Request first_;
  Request second_;
  std::size_t n_;
};

Request wrap(std::unique_ptr<RequestState> s, int peer, int tag, std::size_t n) {
  return Request(std::move(s), Op::Send, peer, tag, n);
}

std::vector<std::byte> copy_of(std::span<const std::byte> d) {
  return {d.begin(), d.end()};
}

// The relay's own device: a vendor of its own making, provisioned in a private temporary directory.
tee::DeviceIdentity relay_identity(int rank) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("teetrain-relay-" + std::to_string(::getpid()) + "-" + std::to_string(rank));
  tee::provision({dir, 1, {}});
  tee::DeviceIdentity id = tee::DeviceIdentity::load_pem(tee::device_identity_path(dir, 0));
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return id;
}

}  // namespace

AdversaryTransport::AdversaryTransport(Transport& inner, AdversarySpec spec, WireFormat wire)
    : inner_(inner), spec_(std::move(spec)), wire_(wire) {
  check_adversary(spec_, inner.size());
  set_timeout(inner.timeout());
  set_wait_policy(inner.wait_policy());
  if (spec_.passive()) snoop_.emplace(wire_, spec_.snoop_dir);
}

AdversaryTransport::~AdversaryTransport() = default;

std::vector<std::string> AdversaryTransport::events() const {
  std::lock_guard lock(mu_);
  return events_;
}

void AdversaryTransport::fired(const std::string& what) {
  events_.push_back(what);
  std::fprintf(stderr, "adversary: %s\n", what.c_str());
  std::fflush(stderr);
}

Request AdversaryTransport::irecv(int peer, std::span<std::byte> buffer, int tag) {
  return inner_.irecv(peer, buffer, tag);
}

Request AdversaryTransport::isend(int peer, std::span<const std::byte> data, int tag) {
  std::unique_lock lock(mu_);
  if (snoop_) {
    snoop_->record(rank(), peer, tag, data);
    return inner_.isend(peer, data, tag);
  }
  if (rank() != spec_.link) return inner_.isend(peer, data, tag);
  if (spec_.kind == AttackKind::Mitm) {
    if (tag == tags::kAttestEvidence && peer == (rank() + 1) % size() && !forged_)
      return forge_evidence(peer, data, tag);
    return inner_.isend(peer, data, tag);
  }
  if (tag != tags::kRing) return inner_.isend(peer, data, tag);
  ++gradient_sent_;
  if (held_) {
    // reorder: this message goes first, the held one right behind it.
    Held h = std::move(*held_);
    held_.reset();
    Request now = inner_.isend(peer, data, tag);
    Request late =
        wrap(std::make_unique<CopiedSend>(inner_, std::move(h.bytes), h.peer, h.tag, 0), h.peer, h.tag, 0);
    previous_ = copy_of(data);
    return wrap(std::make_unique<PairedSend>(inner_, std::move(now), std::move(late), data.size()), peer, tag,
                data.size());
  }
  if (gradient_sent_ != spec_.nth) {
    previous_ = copy_of(data);
    return inner_.isend(peer, data, tag);
  }
  if (spec_.kind == AttackKind::Delay) {
    fired("delayed gradient message " + std::to_string(spec_.nth) + " on link " + std::to_string(rank()) +
          " -> " + std::to_string(peer) + " by " + std::to_string(spec_.delay.count()) + " ms");
    lock.unlock();
    std::this_thread::sleep_for(spec_.delay);
    return inner_.isend(peer, data, tag);
  }
  Request r = attack(peer, data, tag);
  previous_ = copy_of(data);
  return r;
}

// The N-th gradient message on the attacked link: everything but delay (isend) and mitm.
Request AdversaryTransport::attack(int peer, std::span<const std::byte> data, int tag) {
  const std::string where = "gradient message " + std::to_string(spec_.nth) + " on link " +
                            std::to_string(rank()) + " -> " + std::to_string(peer) + " (" +
                            std::to_string(data.size()) + " bytes)";
  std::vector<std::byte> bytes = copy_of(data);
  switch (spec_.kind) {
    case AttackKind::Flip: {
      // The exponent's top bit of the middle float32: in clear, a tiny gradient becomes ~1e35. (An
      // empty chunk, count < P, has nothing to flip; a message under 4 bytes gets its last byte's.)
      if (data.empty()) {
        fired("found nothing to flip in " + where + "; it went through unchanged");
        return inner_.isend(peer, data, tag);
      }
      const std::size_t word = data.size() >= 4 ? data.size() / 8 : 0;
      const std::size_t at = data.size() >= 4 ? 4 * word + 3 : data.size() - 1;
      float before = 0, after = 0;
      const bool whole_float = data.size() >= 4;
      if (whole_float) std::memcpy(&before, bytes.data() + 4 * word, sizeof before);
      bytes[at] ^= std::byte{0x40};
      if (whole_float) std::memcpy(&after, bytes.data() + 4 * word, sizeof after);
      char what[160];
      std::snprintf(what, sizeof what, "flipped bit 6 of byte %zu%s", at,
                    wire_.sealed ? " (ciphertext)" : "");
      std::string text = std::string(what) + " of " + where;
      if (!wire_.sealed && whole_float) {
        std::snprintf(what, sizeof what, ": value #%zu %.6g -> %.6g", word, static_cast<double>(before),
                      static_cast<double>(after));
        text += what;
      }
      fired(text);
      return wrap(std::make_unique<CopiedSend>(inner_, std::move(bytes), peer, tag, data.size()), peer, tag,
                  data.size());
    }
    case AttackKind::Drop:
      fired("dropped " + where);
      return wrap(std::make_unique<CompletedSend>(data.size()), peer, tag, data.size());
    case AttackKind::Replay:
      fired("replayed the previous message (" + std::to_string(previous_.size()) + " bytes) in place of " +
            where);
      return wrap(std::make_unique<CopiedSend>(inner_, previous_, peer, tag, data.size()), peer, tag,
                  data.size());
    case AttackKind::Reorder:
      fired("held back " + where + " to deliver it after the next one");
      held_ = Held{peer, tag, std::move(bytes)};
      return wrap(std::make_unique<CompletedSend>(data.size()), peer, tag, data.size());
    case AttackKind::Truncate:
      fired("truncated " + where + " to " + std::to_string(data.size() / 2) + " bytes");
      bytes.resize(data.size() / 2);
      return wrap(std::make_unique<CopiedSend>(inner_, std::move(bytes), peer, tag, data.size()), peer, tag,
                  data.size());
    default:
      return inner_.isend(peer, data, tag);
  }
}

// mitm: answer the successor's challenge (the nonce in the genuine evidence) with the relay's own
// evidence: same rank and measurements, the relay's key exchange key, and a signature it can make.
Request AdversaryTransport::forge_evidence(int peer, std::span<const std::byte> data, int tag) {
  forged_ = true;
  const tee::ByteView view(reinterpret_cast<const std::uint8_t*>(data.data()), data.size());
  const tee::Evidence genuine = tee::Evidence::deserialize(view);
  const auto kx = tee::X25519KeyPair::generate();
  std::vector<std::uint8_t> forged;
  if (spec_.forgery == MitmForgery::OwnVendor) {
    const tee::DeviceIdentity relay = relay_identity(rank());
    forged = tee::make_evidence(genuine.rank, genuine.measurement, relay.key, relay.certificate.der(),
                                genuine.verifier_nonce, kx.public_key())
                 .serialize();
    fired("replaced rank " + std::to_string(rank()) + "'s attestation evidence to rank " +
          std::to_string(peer) + " with the relay's own (certificate " + relay.certificate.subject() +
          ", from the relay's own vendor root)");
  } else {
    const auto key = tee::Ed25519KeyPair::generate();
    forged = tee::make_evidence(genuine.rank, genuine.measurement, key, genuine.certificate,
                                genuine.verifier_nonce, kx.public_key())
                 .serialize();
    fired("replaced rank " + std::to_string(rank()) + "'s attestation evidence to rank " +
          std::to_string(peer) +
          " with evidence carrying its genuine certificate, signed with the relay's key");
  }
  std::vector<std::byte> bytes(forged.size());
  std::memcpy(bytes.data(), forged.data(), forged.size());
  return wrap(std::make_unique<CopiedSend>(inner_, std::move(bytes), peer, tag, data.size()), peer, tag,
              data.size());
}

}  // namespace tt::comm
