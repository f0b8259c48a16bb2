// AdversaryTransport: an on-path attacker between ranks (`--adversary SPEC`,
// comm/adversary/adversary_spec.h), built as a Transport decorator over the real transport, so the run above
// it — attestation, sealed channel, ring, collectives — is exactly the code a normal run executes.
//
// Each rank wraps its own transport; the decorator on rank r sees every message r sends and acts on
// the link that starts at r. Together the P decorators are one adversary that sees every link. Its
// own bookkeeping (the snoop report at the end) travels over the inner transport, out of band, as an
// attacker's own channel would.
//
// Faults mirror the in-process transport's FaultPlan (tests/common/inproc_transport.h) but act at the sender:
// the bytes of a modified message are the adversary's copy, never the caller's buffer. Every fault
// prints one line to stderr when it fires ("adversary: ..."), so a student sees what happened before
// the receiver's verdict.
#pragma once
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "comm/adversary/adversary_relay.h"
#include "comm/adversary/adversary_spec.h"
#include "comm/adversary/snoop.h"
#include "comm/transport.h"

namespace tt::tee {
struct DeviceIdentity;
}

namespace tt::comm {

class AdversaryTransport final : public Transport {
 public:
  // `inner` must outlive this object; its timeout and wait policy are copied. Throws InputError for
  // a spec that does not fit the world (check_adversary) or an unusable snoop directory.
  AdversaryTransport(Transport& inner, AdversarySpec spec, WireFormat wire);
  ~AdversaryTransport() override;

  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  std::string name() const override { return "adversary(" + inner_.name() + ")"; }
  Request isend(int peer, std::span<const std::byte> data, int tag) override;
  Request irecv(int peer, std::span<std::byte> buffer, int tag) override;

  const AdversarySpec& spec() const { return spec_; }
  // Where the run's all-reduce sends the attacked rank's gradient messages (the banner's and the
  // report's wording only; the attack counts them alike): set by the engine, which knows its algorithm.
  void set_route(GradientRoute route);
  const GradientRoute& route() const { return route_; }
  // What this rank's decorator did, one line per fault that fired.
  std::vector<std::string> events() const;

  // mitm-relay, reflect, relay: what is delivered in place of `data` (from -> to), nullopt to pass it
  // unchanged.
  std::optional<std::vector<std::byte>> relayed(int from, int to, int tag, std::span<const std::byte> data);

  // Collective over every rank, through the inner transport: rank 0 returns the adversary's report
  // (the snoop table, or what the attack did and whether anything noticed), the others "".
  std::string report();

 private:
  Request attack(int peer, std::span<const std::byte> data, int tag);
  Request rewrite(int peer, std::span<const std::byte> data, int tag, const std::string& where);
  Request forge_evidence(int peer, std::span<const std::byte> data, int tag);
  Request oversize(int peer, std::span<const std::byte> data, int tag);
  Request evidence_send(int peer, std::span<const std::byte> data, int tag);
  bool swaps_evidence_from(int peer, int tag) const;
  std::optional<std::vector<std::byte>> swapped_evidence(int from, std::span<const std::byte> data);
  void fired(const std::string& what);
  // Rank 0 gets every rank's blob (in rank order), the others nothing: over the inner transport.
  std::vector<std::vector<std::byte>> gather(std::vector<std::byte> mine);
  std::string active_report(const std::vector<std::vector<std::byte>>& blobs) const;

  Transport& inner_;
  AdversarySpec spec_;
  WireFormat wire_;
  mutable std::mutex mu_;  // sends may come from the main and the communication thread (in turn)
  std::optional<SnoopLog> snoop_;
  std::size_t gradient_sent_ = 0;     // gradient messages the attacked rank sent
  std::optional<int> attacked_peer_;  // the receiver of the N-th, once it went
  GradientRoute route_;               // where they go (set_route), for the report
  std::vector<std::byte> previous_;   // the last one, for replay
  struct Held {
    int peer;
    int tag;
    std::vector<std::byte> bytes;
  };
  std::optional<Held> held_;  // reorder: the message waiting for the next one
  bool forged_ = false;
  std::vector<Request> injected_;    // oversize: its own sends, which no receiver completes
  std::unique_ptr<Relay> relay_;     // mitm-relay, on the rank at the receiving end of the link
  std::vector<std::byte> evidence_;  // reflect, relay: the evidence handed over in place of rank link's
  std::vector<std::string> events_;
};

}  // namespace tt::comm
