#include "comm/adversary/adversary_transport.h"

#include <cstdio>
#include <cstring>
#include <sstream>
#include <thread>

#include "base/error.h"
#include "comm/completed_request.h"
#include "comm/secure/secure_session.h"
#include "tee/bytes.h"
#include "tee/identity/attestation.h"
#include "tee/identity/x509.h"

namespace tt::comm {

namespace {

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

}  // namespace

AdversaryTransport::AdversaryTransport(Transport& inner, AdversarySpec spec, WireFormat wire)
    : inner_(inner), spec_(std::move(spec)), wire_(wire) {
  check_adversary(spec_, inner.size());
  set_timeout(inner.timeout());
  set_wait_policy(inner.wait_policy());
  if (spec_.passive()) snoop_.emplace(wire_, spec_.snoop_dir);
  // The relay sits at the receiving end of its link, where both directions pass.
  if (spec_.kind == AttackKind::MitmRelay && rank() == (spec_.link + 1) % size())
    relay_ = std::make_unique<Relay>(spec_.link, size(), [this](const std::string& what) { fired(what); });
}

AdversaryTransport::~AdversaryTransport() = default;

void AdversaryTransport::set_route(GradientRoute route) {
  std::lock_guard lock(mu_);
  route_ = std::move(route);
}

std::vector<std::string> AdversaryTransport::events() const {
  std::lock_guard lock(mu_);
  return events_;
}

void AdversaryTransport::fired(const std::string& what) {
  events_.push_back(what);
  std::fprintf(stderr, "adversary: %s\n", what.c_str());
  std::fflush(stderr);
}

namespace {

// A receive the relay sees first: the message lands in the relay's buffer, and the caller's buffer
// gets what the relay delivers in its place.
class RelayedRecv final : public RequestState {
 public:
  RelayedRecv(AdversaryTransport& owner, Transport& inner, int peer, std::span<std::byte> user, int tag)
      : owner_(owner),
        t_(inner),
        user_(user),
        buf_(user.size()),
        peer_(peer),
        tag_(tag),
        inner_(inner.irecv(peer, buf_, tag)) {}
  std::optional<std::size_t> poll() override {
    if (!t_.test(inner_)) return std::nullopt;
    const std::span<const std::byte> got = std::span(buf_).first(inner_.bytes());
    const auto out = owner_.relayed(peer_, owner_.rank(), tag_, got);
    const std::span<const std::byte> deliver = out ? std::span<const std::byte>(*out) : got;
    if (deliver.size() > user_.size())
      throw RunError("adversary relay: its message to rank " + std::to_string(owner_.rank()) +
                     " is too long");
    std::copy(deliver.begin(), deliver.end(), user_.begin());
    return deliver.size();
  }

 private:
  AdversaryTransport& owner_;
  Transport& t_;
  std::span<std::byte> user_;
  std::vector<std::byte> buf_;  // declared before inner_: alive until the inner receive is gone
  int peer_;
  int tag_;
  Request inner_;
};

}  // namespace

std::optional<std::vector<std::byte>> AdversaryTransport::relayed(int from, int to, int tag,
                                                                  std::span<const std::byte> data) {
  std::lock_guard lock(mu_);
  if (relay_) return relay_->relay(from, to, tag, data);
  return swapped_evidence(from, data);
}

// reflect, relay: on rank link+1, the evidence from rank `link` is swapped for the one this rank sent
// (reflect) or received from rank link+2 (relay), which the handshake waits for first (its next link).
bool AdversaryTransport::swaps_evidence_from(int peer, int tag) const {
  const bool swap = spec_.kind == AttackKind::Reflect || spec_.kind == AttackKind::Relay;
  return swap && tag == tags::kAttestEvidence && rank() == (spec_.link + 1) % size() &&
         (peer == spec_.link || (spec_.kind == AttackKind::Relay && peer == (rank() + 1) % size()));
}

std::optional<std::vector<std::byte>> AdversaryTransport::swapped_evidence(int from,
                                                                           std::span<const std::byte> data) {
  if (from != spec_.link) {  // relay: rank link+2's evidence, kept to hand over as rank link's
    evidence_ = copy_of(data);
    return std::nullopt;
  }
  const std::string victim = "rank " + std::to_string(rank());
  if (evidence_.empty()) {
    fired("found no evidence to " + std::string(attack_name(spec_.kind)) + "; rank " + std::to_string(from) +
          "'s went through unchanged");
    return std::nullopt;
  }
  fired(spec_.kind == AttackKind::Reflect
            ? "handed " + victim + " its own attestation evidence back as rank " + std::to_string(from) + "'s"
            : "handed " + victim + " rank " + std::to_string((rank() + 1) % size()) +
                  "'s attestation evidence as rank " + std::to_string(from) + "'s");
  return evidence_;
}

Request AdversaryTransport::irecv(int peer, std::span<std::byte> buffer, int tag) {
  if ((relay_ && peer == spec_.link) || swaps_evidence_from(peer, tag))
    return Request(std::make_unique<RelayedRecv>(*this, inner_, peer, buffer, tag), Op::Recv, peer, tag,
                   buffer.size());
  return inner_.irecv(peer, buffer, tag);
}

Request AdversaryTransport::isend(int peer, std::span<const std::byte> data, int tag) {
  std::unique_lock lock(mu_);
  if (snoop_) {
    snoop_->record(rank(), peer, tag, data);
    return inner_.isend(peer, data, tag);
  }
  if (relay_ && peer == spec_.link) {
    auto out = relay_->relay(rank(), peer, tag, data);
    if (!out) return inner_.isend(peer, data, tag);
    return wrap(std::make_unique<CopiedSend>(inner_, std::move(*out), peer, tag, data.size()), peer, tag,
                data.size());
  }
  if (is_evidence_attack(spec_.kind)) return evidence_send(peer, data, tag);
  if (rank() != spec_.link) return inner_.isend(peer, data, tag);
  if (spec_.kind == AttackKind::Mitm || spec_.kind == AttackKind::Oversize) {
    if (tag == tags::kAttestEvidence && peer == (rank() + 1) % size() && !forged_)
      return spec_.kind == AttackKind::Mitm ? forge_evidence(peer, data, tag) : oversize(peer, data, tag);
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
  attacked_peer_ = peer;
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
      return wrap(std::make_unique<CompletedRequest>(data.size()), peer, tag, data.size());
    case AttackKind::Replay:
      fired("replayed the previous message (" + std::to_string(previous_.size()) + " bytes) in place of " +
            where);
      return wrap(std::make_unique<CopiedSend>(inner_, previous_, peer, tag, data.size()), peer, tag,
                  data.size());
    case AttackKind::Reorder:
      fired("held back " + where + " to deliver it after the next one");
      held_ = Held{peer, tag, std::move(bytes)};
      return wrap(std::make_unique<CompletedRequest>(data.size()), peer, tag, data.size());
    case AttackKind::Rewrite:
      return rewrite(peer, data, tag, where);
    case AttackKind::Truncate:
      fired("truncated " + where + " to " + std::to_string(data.size() / 2) + " bytes");
      bytes.resize(data.size() / 2);
      return wrap(std::make_unique<CopiedSend>(inner_, std::move(bytes), peer, tag, data.size()), peer, tag,
                  data.size());
    default:
      return inner_.isend(peer, data, tag);
  }
}

// rewrite: the previous message again, its clear header (the trailing epoch and counter, if the links
// are sealed) copied from the message it replaces, so that the header says "the expected message".
// rewrite:N:fit also cuts or zero-pads what precedes the header to the replaced message's length, so
// that no length check tells them apart either (the previous message may be of another stream: hier's
// sub-groups, Note [Sub-group streams], comm/channel.h).
Request AdversaryTransport::rewrite(int peer, std::span<const std::byte> data, int tag,
                                    const std::string& where) {
  std::vector<std::byte> bytes = previous_;
  const std::size_t h = wire_.clear_trailer;
  const bool headed = h > 0 && bytes.size() >= h && data.size() >= h;
  std::string fitted;
  if (spec_.fit && bytes.size() != data.size()) {
    // The body (ciphertext and tag, or plain values) to the replaced message's body length, its
    // trailing header (if any) kept behind it.
    const std::size_t tail = headed ? h : 0;
    std::vector<std::byte> header(bytes.end() - static_cast<std::ptrdiff_t>(tail), bytes.end());
    bytes.resize(bytes.size() - tail);
    bytes.resize(data.size() - tail, std::byte{0});
    bytes.insert(bytes.end(), header.begin(), header.end());
    fitted = ", " + std::string(previous_.size() > data.size() ? "cut" : "zero-padded") + " from " +
             std::to_string(previous_.size()) + " to " + std::to_string(data.size()) + " bytes";
  }
  if (!headed) {
    fired("replayed the previous message (" + std::to_string(previous_.size()) + " bytes) in place of " +
          where + fitted +
          "; plain links carry no header to rewrite: nothing on the wire says which message it is");
  } else {
    std::copy(data.end() - static_cast<std::ptrdiff_t>(h), data.end(),
              bytes.end() - static_cast<std::ptrdiff_t>(h));
    // The header is be32 epoch || be64 counter (comm/secure/sealed_channel.h).
    const std::uint64_t counter =
        tee::load_be64(reinterpret_cast<const std::uint8_t*>(data.data() + data.size() - h) + 4);
    fired("replayed the previous message (" + std::to_string(previous_.size()) + " bytes) in place of " +
          where + fitted + ", its clear header rewritten to the replaced message's (nonce counter " +
          std::to_string(counter) + ")");
  }
  return wrap(std::make_unique<CopiedSend>(inner_, std::move(bytes), peer, tag, data.size()), peer, tag,
              data.size());
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
    const tee::DeviceIdentity relay = relay_device_identity(rank());
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

// oversize: a message of the spec's size in place of the evidence. Its receiver refuses it unread
// (Note [Sizes before receives]), so its send never completes: the adversary keeps it (and its bytes)
// to itself, and the rank whose evidence it replaced sees its own send complete at once.
Request AdversaryTransport::oversize(int peer, std::span<const std::byte> data, int tag) {
  forged_ = true;
  fired("sent " + std::to_string(spec_.oversize_bytes) + " bytes in place of rank " + std::to_string(rank()) +
        "'s attestation evidence to rank " + std::to_string(peer) + " (" + std::to_string(data.size()) +
        " bytes)");
  std::vector<std::byte> bytes(spec_.oversize_bytes, std::byte{0x41});
  injected_.push_back(
      wrap(std::make_unique<CopiedSend>(inner_, std::move(bytes), peer, tag, 0), peer, tag, 0));
  return wrap(std::make_unique<CompletedRequest>(data.size()), peer, tag, data.size());
}

// The sending half of the evidence attacks: reflect keeps what rank link+1 sends rank link; stale-nonce
// flips a bit of rank link's nonce to its successor; substitute-key overwrites the X25519 key in rank
// link's evidence to it (where each format keeps it: Note [Real evidence message], and the emulated
// evidence's signed bytes in tee/identity/attestation.h).
Request AdversaryTransport::evidence_send(int peer, std::span<const std::byte> data, int tag) {
  const int successor = (spec_.link + 1) % size();
  if (spec_.kind == AttackKind::Reflect && rank() == successor && peer == spec_.link &&
      tag == tags::kAttestEvidence)
    evidence_ = copy_of(data);
  const bool on_link = rank() == spec_.link && peer == successor && !forged_;
  const bool nonce = spec_.kind == AttackKind::StaleNonce && tag == tags::kAttestNonce;
  const bool key = spec_.kind == AttackKind::SubstituteKey && tag == tags::kAttestEvidence;
  if (!on_link || (!nonce && !key)) return inner_.isend(peer, data, tag);
  std::vector<std::byte> bytes = copy_of(data);
  const std::string_view head(reinterpret_cast<const char*>(data.data()),
                              std::min<std::size_t>(data.size(), 8));
  const std::size_t kx_at = head == "TTREAL01" ? 48 : head == "TTEVID02" ? 108 : 0;
  if (nonce && !bytes.empty()) {
    bytes[0] ^= std::byte{0x01};
    fired("flipped bit 0 of rank " + std::to_string(rank()) + "'s verifier nonce to rank " +
          std::to_string(peer));
  } else if (key && kx_at > 0 && bytes.size() >= kx_at + 32) {
    const tee::PublicKey own = tee::X25519KeyPair::generate().public_key();
    std::memcpy(bytes.data() + kx_at, own.data(), own.size());
    fired("replaced the key-exchange key in rank " + std::to_string(rank()) +
          "'s attestation evidence to rank " + std::to_string(peer) + " with the adversary's own");
  } else {
    fired("found nothing to change in rank " + std::to_string(rank()) + "'s handshake message to rank " +
          std::to_string(peer) + "; it went through unchanged");
    return inner_.isend(peer, data, tag);
  }
  forged_ = true;
  return wrap(std::make_unique<CopiedSend>(inner_, std::move(bytes), peer, tag, data.size()), peer, tag,
              data.size());
}

}  // namespace tt::comm
