#include "platform/emulated/emulated_platform.h"

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

#include "base/error.h"
#include "core/backend_factory.h"

namespace tt::platform {

EmulatedPlatform::EmulatedPlatform(const Options& o) {
  if (!o.gpu) throw RunError("the emulated platform needs its GPU (platform::Options::gpu)");
  gpu_ = make_emulated_backend(*o.gpu, o.clock);  // the factory's own construction, concrete type kept
}

std::string EmulatedPlatform::notice(const std::string& model, bool virtual_time) const {
  return "COMPUTE EMULATED: " + model + " runs on an " + gpu_->describe() + "; " +
         (virtual_time ? "VIRTUAL TIME: every time printed is computed for the modelled "
                         "platform (the same on any machine), not measured here"
                       : "buckets, ring, crypto and ingress are real and timed by the wall clock");
}

// The ring's sealing channel: the run's channel, or what the emulated GPU puts in its place — its
// AES-GCM as a cost (wall clock), a sealed token per message with modelled crypto (virtual time).
// Virtual time is the profiler's clock (TrainingRun sets it from the plan): a virtual ring needs a
// virtual clock to book its links and crypto in.
comm::Channel& EmulatedPlatform::sealing_channel(const HostPathRequest& r) {
  if (r.profiler.virtual_time() && r.tee) {
    if (r.sealed == nullptr) throw RunError("a sealed ring in virtual time needs the run's sealed channel");
    // fast's GPU kernels hold the SMs backward runs on (Note [GPU crypto shares the SMs]).
    return virtual_seal_.emplace(*r.sealed, r.crypto(gpu_->gpu()), r.profiler.clock(), &r.profiler,
                                 r.device_crypto ? gpu_.get() : nullptr);
  }
  if (r.device_crypto) {
    // fast with device crypto: the ring's messages are sealed "on the GPU", i.e. cost waits at the
    // GPU's AES-GCM rate; every other collective keeps the real sealed channel.
    return gpu_crypto_.emplace(gpu_->gpu().aead_gbps(), r.forward_ag, &r.profiler, &gpu_->comm_stream());
  }
  return r.channel;
}

// --cc-transfer-us: a ring sealed on the host pays H100 CC's fixed cost per bounce-buffer crossing of
// the emulated GPU's chunks (cc_transfer_channel.h). A GPU in CC mode (--cc-hardware) also pays the
// copies' bytes, and its fixed cost when --cc-transfer-us gives none. fast's GPU-sealed ciphertext
// takes the route's GPU-to-GPU path instead (`peer`, Note [CC hardware costs]): on H100 CC through host
// memory, two crossings at the measured copy costs (--cc-transfer-us, a fit of cc's host path, does not
// apply); on Blackwell an encrypted NVLink transfer's set-up at each end inside a node and the host
// bridge's copies out of it; none on the direct what-if. Plaintext rings never cross.
comm::Channel& EmulatedPlatform::crossing_channel(const HostPathRequest& r, comm::Channel& sealing,
                                                  const PeerWire& peer,
                                                  std::optional<CcTransferChannel>& slot) {
  if (!r.tee) return sealing;
  const CcCosts& cc = gpu_->gpu().cc;
  if (r.device_crypto) {
    const auto per_byte = [](double gbps) { return gbps > 0 ? 1.0 / (gbps * 1e9) : 0.0; };
    if (!peer.crosses()) return sealing;
    return slot.emplace(sealing, peer.toll_us(), &r.profiler, &r.profiler.clock(),
                        CcCopyPerByte{.d2h_s = per_byte(peer.d2h_gbps), .h2d_s = per_byte(peer.h2d_gbps)});
  }
  const double toll_us = r.cc_transfer_us > 0 ? r.cc_transfer_us : cc.crossing_us();
  if (toll_us <= 0) return sealing;
  return slot.emplace(sealing, toll_us, &r.profiler, &r.profiler.clock(), crossing_bytes(r, cc));
}

// Note [Messages inside a node] (core/emulated/emulated_gpu.h): each message takes its message_route().
// Every row's sealed messages between nodes take the channel below; on h100-ppcie and tee-io-what-if a
// message between two GPUs of one node skips it and its crossings, and Blackwell's fast crosses the
// encrypted NVLink's set-up inside a node (cc_inside_) but the host bridge out of it (cc_transfers_).
comm::Channel& EmulatedPlatform::route_channel(const HostPathRequest& r) {
  const EmulatedGpu& gpu = gpu_->gpu();
  comm::Channel& sealing = sealing_channel(r);
  const MessageRoute between = message_route(gpu.cc, gpu.topology, 0, comm::kAnyRank);
  const MessageRoute inside = message_route(gpu.cc, gpu.topology, 0, 0);
  comm::Channel& out = crossing_channel(r, sealing, between.peer, cc_transfers_);
  const bool own_inside = r.tee && r.device_crypto && inside.sealed() && !(inside.peer == between.peer);
  if (!r.tee || (inside.sealed() && !own_inside)) return out;
  comm::Channel* in = own_inside ? &crossing_channel(r, sealing, inside.peer, cc_inside_) : nullptr;
  const std::size_t carried = r.profiler.virtual_time() && virtual_seal_ ? virtual_seal_->carried_bytes() : 0;
  return node_link_.emplace(out, in, gpu.topology, gpu.cc, carried);
}

// A crossing's bytes at the CC copy plateau, less what the channel inside already charges for them per
// byte: the host's AES-GCM pass (in virtual time the modelled host's rate), so that a hop costs what
// H100 CC's copies measure.
CcCopyPerByte EmulatedPlatform::crossing_bytes(const HostPathRequest& r, const CcCosts& cc) const {
  if (!cc.on()) return {};
  const double host_s = !r.crypto ? 0.0 : 1.0 / (r.crypto(gpu_->gpu()).aead_gbps * 1e9);
  return {.d2h_s = std::max(0.0, 1.0 / (cc.d2h_gbps * 1e9) - host_s),
          .h2d_s = std::max(0.0, 1.0 / (cc.h2d_gbps * 1e9) - host_s)};
}

// The ring's wire: --link emulate (and every ring in virtual time) sends tokens over modelled links —
// plaintext messages carry no payload, sealed ones in virtual time carry their sealed token; otherwise
// messages move for real, paced at --link-gbps if given.
comm::Transport& EmulatedPlatform::ring_wire(const HostPathRequest& r, const comm::Channel& channel,
                                             bool modelled_links) {
  // fast's ciphertext on Blackwell: NVLink at its encrypted rate (Note [CC hardware costs]).
  const double peer_gbps = r.tee && r.device_crypto ? gpu_->gpu().cc.peer.link_gbps : 0.0;
  const double link_gbps = r.link_gbps > 0   ? r.link_gbps
                           : !modelled_links ? 0.0
                           : peer_gbps > 0   ? peer_gbps
                                             : gpu_->gpu().spec.nvlink_gbps;
  const Topology& topo = gpu_->gpu().topology;
  if (modelled_links && topo.given() && r.link_gbps <= 0) {
    // Each pair's link class (core/emulated/topology.h); NVLink runs at the rate above (the GPU's, or
    // Blackwell's encrypted one for fast's ciphertext). A fold's ranks are whole nodes of the modelled
    // ring, at least two (Note [Folded ring]): the link from its last rank to rank 0 crosses nodes there too.
    std::vector<comm::LinkLimit> per_peer;
    for (int p = 0; p < r.transport.size(); ++p) {
      const LinkClassSpec& c = link_class_spec(topo.between(r.transport.rank(), p));
      per_peer.push_back({.gbytes_per_s = c.gbps > 0 ? c.gbps : link_gbps,
                          .latency = std::chrono::duration<double, std::micro>(c.latency_us)});
    }
    const bool virt = r.profiler.virtual_time();
    const std::size_t carry = virt && virtual_seal_ ? virtual_seal_->carried_bytes() : 0;
    if (virt || channel.pass_through())
      return emulated_link_.emplace(r.transport, std::move(per_peer), &r.profiler.clock(), carry, &r.profiler,
                                    topo.describe(r.model_ranks > 0 ? r.model_ranks : r.transport.size()));
  }
  if (r.profiler.virtual_time()) {
    const std::size_t carry = virtual_seal_ ? virtual_seal_->carried_bytes() : 0;
    return emulated_link_.emplace(r.transport, comm::LinkLimit{link_gbps, {}}, &r.profiler.clock(), carry,
                                  &r.profiler);
  }
  if (modelled_links && channel.pass_through())
    return emulated_link_.emplace(r.transport, comm::LinkLimit{link_gbps, {}});
  if (link_gbps > 0) return link_.emplace(r.transport, comm::LinkLimit{link_gbps, {}});
  return r.transport;
}

// Note [Modelled links need modelled compute]: a modelled link moves no payload (a token, or nothing),
// so the bytes that arrive are not the bytes that were sent; only synthetic gradients, whose values
// nobody reads (an emulated GPU's), may cross one. Links are therefore modelled only on this platform:
// with --link emulate (which the real platforms refuse: real_platform.cpp) and in every ring in virtual
// time; the ring's adds then live on the same emulated GPU (EmulatedReduceMemory: costs, never done).
HostPathParts EmulatedPlatform::host_path(const HostPathRequest& r) {
  const bool modelled_links = r.emulated_links || r.profiler.virtual_time();
  comm::Channel& channel = route_channel(r);
  comm::Transport& wire = ring_wire(r, channel, modelled_links);
  comm::ReduceMemory& memory =
      modelled_links ? static_cast<comm::ReduceMemory&>(gpu_memory_.emplace(*gpu_)) : host_memory_;
  return {channel, wire, memory};
}

std::unique_ptr<Platform> make_emulated_platform(const Options& o) {
  return std::make_unique<EmulatedPlatform>(o);
}

void refuse_emulated(const Request& r, std::vector<std::string>& out) {
  if (r.checkpoints)
    out.push_back("--compute emulate has no real parameters or optimizer state; drop --save-every/--resume");
  if (r.tf32) out.push_back("--tf32 applies to --device cuda only");
  if (r.adversary_on_device_crypto)
    out.push_back(
        "--adversary needs messages that are really sealed: under --compute emulate --time wall, --tee "
        "fast seals gradients \"on the GPU\" as a wait and the synthetic gradients travel in clear, so an "
        "attack on them would pass unnoticed; drop --time wall (virtual time seals a token per message), "
        "add --tee-device-crypto off, use --tee cc, or drop --compute emulate");
}

}  // namespace tt::platform
