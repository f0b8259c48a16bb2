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

// The ring's channel: the run's channel, or what the emulated GPU puts in its place — its AES-GCM as a
// cost (wall clock), a sealed token per message with modelled crypto (virtual time), and H100 CC's
// bounce-buffer crossings on a ring the host seals. Virtual time is the profiler's clock (TrainingRun
// sets it from the plan): a virtual ring needs a virtual clock to book its links and crypto in.
comm::Channel& EmulatedPlatform::ring_channel(const HostPathRequest& r) {
  comm::Channel* channel = &r.channel;
  if (r.profiler.virtual_time() && r.tee) {
    if (r.sealed == nullptr) throw RunError("a sealed ring in virtual time needs the run's sealed channel");
    // fast's GPU kernels hold the SMs backward runs on (Note [GPU crypto shares the SMs]).
    channel = &virtual_seal_.emplace(*r.sealed, r.crypto(gpu_->gpu()), r.profiler.clock(), &r.profiler,
                                     r.device_crypto ? gpu_.get() : nullptr);
  } else if (r.device_crypto) {
    // fast with device crypto: the ring's messages are sealed "on the GPU", i.e. cost waits at the
    // GPU's AES-GCM rate; every other collective keeps the real sealed channel.
    channel = &gpu_crypto_.emplace(gpu_->gpu().aead_gbps(), r.forward_ag, &r.profiler, &gpu_->comm_stream());
  }
  // --cc-transfer-us: a ring sealed on the host pays H100 CC's fixed cost per bounce-buffer crossing
  // of the emulated GPU's chunks (cc_transfer_channel.h). A GPU in CC mode (--cc-hardware) also pays
  // the copies' bytes, and its fixed cost when --cc-transfer-us gives none. fast's GPU-sealed
  // ciphertext takes the platform's GPU-to-GPU path instead (CcCosts::peer, Note [CC hardware costs]):
  // on H100 CC through host memory, two crossings at the measured copy costs (--cc-transfer-us, a fit
  // of cc's host path, does not apply); on Blackwell an encrypted NVLink transfer's set-up at each end;
  // none on the direct what-if. Plaintext rings never cross.
  if (!r.tee) return *channel;
  const CcCosts& cc = gpu_->gpu().cc;
  if (r.device_crypto) {
    const PeerWire& w = cc.peer;
    const auto per_byte = [](double gbps) { return gbps > 0 ? 1.0 / (gbps * 1e9) : 0.0; };
    if (w.crosses()) {
      cc_transfers_.emplace(*channel, w.toll_us(), &r.profiler, &r.profiler.clock(),
                            CcCopyPerByte{.d2h_s = per_byte(w.d2h_gbps), .h2d_s = per_byte(w.h2d_gbps)});
      channel = &*cc_transfers_;
    }
    return *channel;
  }
  const double toll_us = r.cc_transfer_us > 0 ? r.cc_transfer_us : cc.crossing_us();
  if (toll_us > 0) {
    cc_transfers_.emplace(*channel, toll_us, &r.profiler, &r.profiler.clock(), crossing_bytes(r, cc));
    channel = &*cc_transfers_;
  }
  return *channel;
}

// Note [Messages inside a node] (core/emulated/emulated_gpu.h): on h100-ppcie and tee-io-what-if a
// message between two GPUs of one node skips the sealing channel and its crossings; the others keep it.
comm::Channel& EmulatedPlatform::node_channel(const HostPathRequest& r, comm::Channel& sealing) {
  const EmulatedGpu& gpu = gpu_->gpu();
  if (!r.tee || gpu.cc.node == NodeMessages::Sealed) return sealing;
  const std::size_t carried = r.profiler.virtual_time() && virtual_seal_ ? virtual_seal_->carried_bytes() : 0;
  return node_link_.emplace(sealing, gpu.topology, gpu.cc.node, carried);
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
    // Blackwell's encrypted one for fast's ciphertext).
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
                                    topo.describe(r.transport.size()));
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
  comm::Channel& channel = node_channel(r, ring_channel(r));
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
