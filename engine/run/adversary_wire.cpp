#include "engine/run/adversary_wire.h"

#include "comm/secure/sealed_channel.h"

namespace tt {

AdversaryWire::AdversaryWire(comm::Transport& inner, const std::optional<comm::AdversarySpec>& spec,
                             bool sealed)
    : inner_(inner) {
  if (!spec) return;
  comm::WireFormat wire;
  wire.sealed = sealed;
  wire.clear_trailer = sealed ? comm::SealedChannel::kHeaderSize : 0;
  wire.tag_bytes = sealed ? comm::SealedChannel::kOverhead - comm::SealedChannel::kHeaderSize : 0;
  adversary_.emplace(inner, *spec, wire);
}

std::string AdversaryWire::banner() const {
  if (!adversary_) return "";
  return "adversary ON (teaching: an attacker on the links between ranks): " +
         comm::describe(adversary_->spec(), adversary_->size());
}

std::string AdversaryWire::report() {
  return adversary_ ? adversary_->report() : "";
}

}  // namespace tt
