#include "engine/gradients/allreduce_selection.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <utility>

#include "base/error.h"
#include "base/untrusted_json.h"
#include "engine/gradients/segments.h"
#include "tee/regular_file.h"

namespace tt {

namespace {

constexpr const char* kFormat = "teetrain-allreduce-cost-v1";

// Shared memory between ranks on one host, as `bench allreduce` measures it on a 2-core x86 machine
// (message: latency and MPI software per message; wire: one copy through shared memory; reduce: the
// add loop). Open MPI's shared-memory transport sends up to 4096 bytes with its headers eagerly
// (btl_vader_eager_limit; a run uses the limit MPI reports, agreed over the ranks); a longer message
// waits for a rendezvous, measured at about 4 us more (4 KiB: 5.8-7.2 us against 1.9 us for 2 KiB). A
// calibration of the machine at hand replaces all of it.
constexpr comm::LinkCosts kSharedMemory{
    .message_us = 8.0, .gbps = 4.0, .reduce_gbps = 4.0, .eager_bytes = 4032, .rendezvous_us = 4.0};
// One core's AES-256-GCM (OpenSSL, AES-NI), and what a sealed message costs beyond its bytes: the
// AEAD's set-up, the nonce, the associated data and the tag check, at both ends.
constexpr double kCpuAeadGbps = 2.5;
constexpr double kSealedMessageUs = 2.0;
// An emulated GPU's link and reduce kernel: launch and synchronisation per message.
constexpr double kGpuMessageUs = 10.0;

std::string mode_name(TeeMode m) {
  return enum_name(m);
}

// A topology's links (core/emulated/topology.h): the node's class is the model's link (its latency
// added to each message), and a step between nodes pays the difference to the inter-node class
// (Note [Steps at the slowest link], comm/allreduce/allreduce_cost.h). NVLink's rate is `link.gbps`
// (the GPU's, or Blackwell's encrypted one).
void price_topology(const Topology& t, const comm::LinkCosts& link, comm::CostModel& m) {
  const LinkClassSpec& in = link_class_spec(t.intra);
  const LinkClassSpec& out = link_class_spec(t.inter);
  const auto ns_per_byte = [&link](const LinkClassSpec& c) {
    return 1.0 / (c.gbps > 0 ? c.gbps : link.gbps);
  };
  m.node_ranks = t.gpus_per_node;
  m.message_us += in.latency_us;
  m.wire_ns_per_byte += ns_per_byte(in) - 1.0 / link.gbps;
  m.inter_message_us = out.latency_us - in.latency_us;
  m.inter_wire_ns_per_byte = ns_per_byte(out) - ns_per_byte(in);
}

// Note [Each end of a step] (comm/allreduce/allreduce_cost.h): what a message costs its link, by the
// link class of its pair, and at each end, by its route, as the run charges them. The link: its class's
// latency and its bytes at the class's rate (NVLink's is `link.gbps`, the GPU's or Blackwell's encrypted
// one), as EmulatedLinkTransport books it, with no kGpuMessageUs: the class's latency already holds the
// software of a hop (docs/reproducing.md, "Topology"). The ends: the sealing channel's per-message cost
// and a crossing's toll (alike at both ends) half at each, the bytes at the seal rate at the sender and
// at the open rate at the receiver. Without nodes (--gpus-per-node) every rank is on one node and the
// run books each link at `link.gbps` with no latency (core/emulated/topology.h).
comm::StepCosts step_costs(const Topology& t, const comm::LinkCosts& link,
                           const std::array<comm::TeeCosts, 3>& routes, bool forward_all_gather) {
  const auto ns_per_byte = [](double gbps) { return gbps > 0 ? 1.0 / gbps : 0.0; };
  const auto ends = [&ns_per_byte](const comm::TeeCosts& tee) {
    return comm::MessageEnds{.seal = {.us = tee.message_us / 2, .ns_per_byte = ns_per_byte(tee.seal_gbps)},
                             .open = {.us = tee.message_us / 2, .ns_per_byte = ns_per_byte(tee.open_gbps)}};
  };
  const auto wire = [&](const LinkClassSpec& c) {
    return comm::MessageCost{.us = c.latency_us, .ns_per_byte = ns_per_byte(c.gbps > 0 ? c.gbps : link.gbps)};
  };
  const comm::MessageCost one_node{.us = 0, .ns_per_byte = ns_per_byte(link.gbps)};
  return {.link = t.given() ? std::array{wire(link_class_spec(t.intra)), wire(link_class_spec(t.inter))}
                            : std::array{one_node, one_node},
          .ends = {ends(routes[0]), ends(routes[1]), ends(routes[2])},
          .forward_all_gather = forward_all_gather};
}

// "seal/open 3.4 GB/s, 14.0 us per sealed message" ("not sealed" where nothing is).
std::string tee_title_of(const comm::TeeCosts& tee) {
  if (tee.seal_gbps <= 0) return "not sealed";
  char buf[100];
  std::snprintf(buf, sizeof buf, "seal/open %.1f GB/s, %.1f us per sealed message", tee.seal_gbps,
                tee.message_us);
  return buf;
}

// The GPU-to-GPU link the model prices at `gbps`, named by the platform that sets it: fast's ciphertext
// on a platform that encrypts NVLink at its own rate ("blackwell encrypted NVLink 510 GB/s (arXiv
// 2606.23969)"), else the GPU's NVLink, with the CC platform it runs under where CC is on ("h100 NVLink
// 450 GB/s under blackwell (arXiv 2606.23969)"): a Blackwell run's source never reads as H100's alone.
std::string nvlink_title(const EmulatedGpu& gpu, double gbps, bool encrypted) {
  char rate[40];
  std::snprintf(rate, sizeof rate, " %.0f GB/s", gbps);
  const std::string platform = std::string(enum_name(gpu.cc.hardware)) + " (" + gpu.cc.source + ")";
  if (encrypted)
    return std::string(enum_name(gpu.cc.hardware)) + " encrypted NVLink" + rate + " (" + gpu.cc.source + ")";
  return gpu.spec.name + " NVLink" + rate + (gpu.cc.on() ? " under " + platform : std::string());
}

// nvlink: the node's link where it is NVLink (nvlink_title).
std::string topology_title(const Topology& t, const std::string& nvlink) {
  const std::string inside = t.intra == LinkClass::Nvlink ? nvlink : link_class_spec(t.intra).title;
  return "nodes of " + std::to_string(t.gpus_per_node) + ", " + inside + " inside, " +
         link_class_spec(t.inter).title + " between";
}

// What a message on `route` costs (Note [Messages inside a node]): nothing beyond its link where it is
// not sealed (in clear, or encrypted by the link at link rate).
comm::TeeCosts tee_costs(const ParallelOptions& parallel, const ComputeOptions& compute,
                         const TeeSwitches& ts, const EmulatedGpu* gpu, const MessageRoute& route) {
  if (!ts.on || !route.sealed()) return {};
  comm::TeeCosts t;
  t.forward_wire = ts.forward_ag;
  const bool on_gpu = ts.device_crypto && gpu != nullptr;
  if (gpu != nullptr && compute.virtual_time()) {
    // What the virtual-time channel will charge: the bytes at the modelled rate, and its per-message
    // cost at each end (a bounce re-encryption doubles the bytes). A hop's message spreads over the
    // host's cores only when the ring is pipelined into segments; otherwise one core seals it.
    const platform::CryptoCostModel m = modelled_crypto(compute.host, ts, *gpu);
    const double cores = on_gpu || !ts.pipeline ? 1.0 : std::max(m.cores, 1);
    t.seal_gbps = m.aead_gbps * cores / (m.bounce_reencrypt ? 2.0 : 1.0);
    t.open_gbps = t.seal_gbps;
    t.message_us = 2 * m.per_message_us / cores;
    t.seal_message_us = m.per_message_us / cores;
  } else {
    const double rate = on_gpu ? gpu->aead_gbps() : kCpuAeadGbps * std::max(ts.crypto_threads, 1);
    t.seal_gbps = rate;
    t.open_gbps = rate;
    t.message_us = kSealedMessageUs;
    t.seal_message_us = kSealedMessageUs / 2;
  }
  // H100 CC's bounce buffers: one crossing at the sender, one at the receiver (cc_transfer_channel.h),
  // priced as the emulated platform charges them (EmulatedPlatform::crossing_channel): a host-sealed
  // ring pays --cc-transfer-us or the CC row's fixed cost, and with a GPU in CC mode each crossing's
  // bytes at the copy plateau beyond the host's own AES-GCM pass; a GPU-sealed ring takes the route's
  // GPU-to-GPU path (Note [CC hardware costs]).
  const CcCosts cc = gpu != nullptr ? gpu->cc : CcCosts{};
  const auto slower = [](double gbps, double extra_s_per_byte) {
    return 1e-9 / (1.0 / (gbps * 1e9) + std::max(0.0, extra_s_per_byte));
  };
  if (on_gpu) {
    const PeerWire& w = route.peer;
    t.message_us += w.sender_us + w.receiver_us;
    t.seal_message_us += w.sender_us;
    if (w.d2h_gbps > 0) t.seal_gbps = slower(t.seal_gbps, 1.0 / (w.d2h_gbps * 1e9));
    if (w.h2d_gbps > 0) t.open_gbps = slower(t.open_gbps, 1.0 / (w.h2d_gbps * 1e9));
    return t;
  }
  const double toll_us = parallel.cc_transfer_us > 0 ? parallel.cc_transfer_us : cc.crossing_us();
  if (toll_us > 0) t.message_us += 2 * toll_us;
  if (toll_us > 0) t.seal_message_us += toll_us;
  if (cc.on()) {
    const double host_pass_s = 1.0 / ((compute.virtual_time() ? compute.host.aead_gbps : kCpuAeadGbps) * 1e9);
    t.seal_gbps = slower(t.seal_gbps, 1.0 / (cc.d2h_gbps * 1e9) - host_pass_s);
    t.open_gbps = slower(t.open_gbps, 1.0 / (cc.h2d_gbps * 1e9) - host_pass_s);
  }
  return t;
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream f(path);
  if (!f) return nullptr;
  const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return parse_untrusted_json(text);
}

std::string how_to_write(TeeMode mode) {
  return "write it with `mpirun -np P teetrain bench allreduce --tee " + mode_name(mode) +
         " --calibrate FILE`";
}

// The file's format tag ("" when absent or not a string: never a json type error).
std::string format_of(const nlohmann::json& doc) {
  const auto it = doc.find("format");
  return it != doc.end() && it->is_string() ? it->get<std::string>() : "";
}

double number(const nlohmann::json& m, const char* key) {
  const auto it = m.find(key);
  if (it == m.end() || !it->is_number() || it->get<double>() < 0) return -1;
  return it->get<double>();
}

}  // namespace

platform::CryptoCostModel modelled_crypto(const HostModel& host, const TeeSwitches& ts,
                                          const EmulatedGpu& gpu) {
  platform::CryptoCostModel m;
  if (ts.device_crypto) {
    m.where = "GPU";
    m.aead_gbps = gpu.aead_gbps();
    // A seal or open is a kernel: in CC mode its launch costs what CC's launches measure (Note [CC
    // hardware costs]); without CC the measured rate already includes it.
    m.per_message_us = gpu.cc.launch_us;
    return m;
  }
  m.aead_gbps = host.aead_gbps;
  m.cores = host.crypto_cores > 0 ? host.crypto_cores : ts.crypto_threads;
  m.per_message_us = host.message_us;
  m.bounce_reencrypt = host.bounce_reencrypt;
  return m;
}

CostModelSource default_cost_model(const ParallelOptions& parallel, const ComputeOptions& compute,
                                   const TeeSwitches& ts, const EmulatedGpu* gpu, const LinkFacts& mpi) {
  comm::LinkCosts link = kSharedMemory;
  std::string where = "shared memory";
  // The limit MPI reports (its header included), where the ranks agreed on one.
  if (mpi.eager_limit > kMpiHeaderBytes) link.eager_bytes = mpi.eager_limit - kMpiHeaderBytes;
  link.rendezvous_turns = mpi.rendezvous_turns();
  // An emulated GPU's links are modelled, not MPI's: no eager protocol to price.
  if (gpu != nullptr) {
    link.eager_bytes = 0;
    link.rendezvous_turns = false;
  }
  const bool topology = gpu != nullptr && gpu->topology.given() && parallel.link_gbps <= 0;
  // One node of emulated GPUs whose links the run models (--link emulate, and every ring in virtual
  // time: EmulatedPlatform::host_path) is priced step by step as a topology's nodes are (Note [Each end
  // of a step]); the fitted terms stay for real links and calibrations.
  const bool one_node = gpu != nullptr && !gpu->topology.given() &&
                        (parallel.link == LinkModel::Emulate || compute.virtual_time());
  if (gpu != nullptr && (parallel.link == LinkModel::Emulate || topology || one_node)) {
    link = {
        .message_us = kGpuMessageUs, .gbps = gpu->spec.nvlink_gbps, .reduce_gbps = gpu->spec.hbm_gbps / 3};
    // fast's ciphertext on Blackwell: NVLink at its encrypted rate (Note [CC hardware costs]).
    const bool encrypted = ts.on && ts.device_crypto && gpu->cc.peer.link_gbps > 0;
    if (encrypted) link.gbps = gpu->cc.peer.link_gbps;
    where = nvlink_title(*gpu, link.gbps, encrypted);
  }
  if (parallel.link_gbps > 0) {
    link.gbps = parallel.link_gbps;
    where = "--link-gbps " + std::to_string(parallel.link_gbps);
  }
  // Each hop priced by the route its messages take, as the run routes them (message_route): a step
  // inside a node by a message between two of its GPUs, a step between nodes by one that leaves.
  const CcCosts cc = gpu != nullptr ? gpu->cc : CcCosts{};
  const Topology topo = gpu != nullptr ? gpu->topology : Topology{};
  const comm::TeeCosts tee = tee_costs(parallel, compute, ts, gpu, message_route(cc, topo, 0, 0));
  comm::CostModel model = comm::compose(link, tee);
  std::string tee_title = tee_title_of(tee);
  if (topology) {
    price_topology(gpu->topology, link, model);
    where = topology_title(gpu->topology, where);
    const comm::TeeCosts out =
        tee_costs(parallel, compute, ts, gpu, message_route(cc, topo, 0, topo.gpus_per_node));
    const comm::CostModel in_parts = comm::compose({}, tee), out_parts = comm::compose({}, out);
    model.inter_message_us += out_parts.message_us - in_parts.message_us;
    model.inter_wire_ns_per_byte += out_parts.wire_ns_per_byte - in_parts.wire_ns_per_byte;
    model.inter_forward_message_us = out_parts.forward_message_us - in_parts.forward_message_us;
    model.inter_forward_ns_per_byte = out_parts.forward_ns_per_byte - in_parts.forward_ns_per_byte;
    if (tee_title != tee_title_of(out))
      tee_title = "inside a node " + tee_title + ", between " + tee_title_of(out);
    const comm::TeeCosts group =
        tee_costs(parallel, compute, ts, gpu, message_route(cc, topo, 0, comm::kAnyRank));
    model.steps = step_costs(topo, link, {tee, out, group}, ts.forward_ag);
  }
  if (one_node) {
    // Only the ring's forwarded all-gather may take another route than a message inside the node.
    const comm::TeeCosts group =
        tee_costs(parallel, compute, ts, gpu, message_route(cc, topo, 0, comm::kAnyRank));
    model.steps = step_costs(topo, link, {tee, tee, group}, ts.forward_ag);
    where += ", one node";
    if (ts.forward_ag && tee_title != tee_title_of(group))
      tee_title = "inside the node " + tee_title + ", forwarded all-gather " + tee_title_of(group);
  }
  return {model, "defaults: " + where + ", tee " + mode_name(ts.mode()) + " (" + tee_title + ")"};
}

CostModelSource cost_model_for(const ParallelOptions& parallel, const ComputeOptions& compute,
                               const TeeSwitches& ts, const EmulatedGpu* gpu, const LinkFacts& link) {
  return parallel.cost.empty() ? default_cost_model(parallel, compute, ts, gpu, link)
                               : load_cost_model(parallel.cost, ts.mode(), link);
}

nlohmann::json cost_model_json(const comm::CostModel& m) {
  nlohmann::json j = {{"message_us", m.message_us},
                      {"wire_ns_per_byte", m.wire_ns_per_byte},
                      {"reduce_ns_per_byte", m.reduce_ns_per_byte}};
  if (m.eager_bytes > 0) {
    j["eager_bytes"] = m.eager_bytes;
    j["rendezvous_us"] = m.rendezvous_us;
    j["rendezvous_turns"] = m.rendezvous_turns;
  }
  if (m.node_ranks > 0) {
    j["node_ranks"] = m.node_ranks;
    j["inter_message_us"] = m.inter_message_us;
    j["inter_wire_ns_per_byte"] = m.inter_wire_ns_per_byte;
  }
  // Priced step by step (Note [Each end of a step]), the terms above are not what predicted_us sums.
  if (m.steps) j["priced"] = "each end of every step";
  return j;
}

CostModelSource load_cost_model(const std::string& path, TeeMode mode, const LinkFacts& link) {
  const nlohmann::json doc = read_json(path);
  if (doc.is_null() || !doc.is_object()) {
    throw InputError("--allreduce-cost " + path + ": not a readable calibration file; " + how_to_write(mode));
  }
  const auto models = doc.find("models");
  if (format_of(doc) != kFormat || models == doc.end() || !models->is_object()) {
    throw InputError("--allreduce-cost " + path + ": not a " + kFormat + " file; " + how_to_write(mode));
  }
  const auto m = models->find(mode_name(mode));
  if (m == models->end() || !m->is_object()) {
    throw InputError("--allreduce-cost " + path + " has no model for --tee " + mode_name(mode) + "; " +
                     how_to_write(mode));
  }
  comm::CostModel model{number(*m, "message_us"), number(*m, "wire_ns_per_byte"),
                        number(*m, "reduce_ns_per_byte")};
  if (model.message_us < 0 || model.wire_ns_per_byte < 0 || model.reduce_ns_per_byte < 0) {
    throw InputError("--allreduce-cost " + path + ": the --tee " + mode_name(mode) +
                     " model needs non-negative message_us, wire_ns_per_byte and reduce_ns_per_byte");
  }
  // The eager limit is optional (a model without one prices every message alike).
  if (m->contains("eager_bytes") || m->contains("rendezvous_us")) {
    const double eager = number(*m, "eager_bytes");
    model.rendezvous_us = number(*m, "rendezvous_us");
    if (eager < 0 || eager > 1e9 || model.rendezvous_us < 0) {
      throw InputError("--allreduce-cost " + path + ": the --tee " + mode_name(mode) +
                       " model's eager_bytes and rendezvous_us must both be non-negative numbers "
                       "(eager_bytes at most 1e9); " +
                       how_to_write(mode));
    }
    model.eager_bytes = static_cast<std::size_t>(eager);
  } else if (link.eager_limit > kMpiHeaderBytes) {
    model.eager_bytes = link.eager_limit - kMpiHeaderBytes;
  }
  // Note [Rendezvous turns] (comm/allreduce/allreduce_cost.h): a property of the link unless the file
  // says.
  model.rendezvous_turns = link.rendezvous_turns();
  if (const auto turns = m->find("rendezvous_turns"); turns != m->end()) {
    if (!turns->is_boolean()) {
      throw InputError("--allreduce-cost " + path + ": the --tee " + mode_name(mode) +
                       " model's rendezvous_turns must be true or false; " + how_to_write(mode));
    }
    model.rendezvous_turns = turns->get<bool>();
  }
  return {model, "calibration " + path + " (tee " + mode_name(mode) + ")"};
}

void save_cost_model(const std::string& path, TeeMode mode, const comm::CostFit& fit,
                     const nlohmann::json& about) {
  std::error_code ec;
  nlohmann::json doc = std::filesystem::exists(path, ec) ? read_json(path) : nlohmann::json::object();
  if (!doc.is_object() || (doc.contains("format") && format_of(doc) != kFormat) ||
      (doc.contains("models") && !doc["models"].is_object())) {
    throw InputError("--calibrate " + path + ": exists and is not a " + kFormat + " file; give another path");
  }
  doc["format"] = kFormat;
  nlohmann::json entry = cost_model_json(fit.model);
  entry["fit_mean_abs_rel_error"] = fit.mean_abs_rel_error;
  entry["measured"] = about;
  doc["models"][mode_name(mode)] = entry;
  const tee::UniqueFd fd = tee::open_output_file(path, "--calibrate", tee::OutputMode::Truncate);
  tee::write_output(fd.get(), doc.dump(2) + "\n", path, "--calibrate");
}

AlgoSelection::AlgoSelection(std::optional<comm::ReduceAlgo> request, CostModelSource model, int ranks,
                             std::size_t segment_bytes, std::size_t overhead, bool split,
                             std::shared_ptr<AlgoPrices> prices)
    : request_(request),
      model_(std::move(model)),
      ranks_(ranks),
      segment_bytes_(segment_bytes),
      overhead_(overhead),
      split_(split),
      prices_(prices != nullptr ? std::move(prices) : std::make_shared<AlgoPrices>()) {}

const comm::AlgoChoice& AlgoSelection::choice(int bucket, std::size_t count) {
  const auto it = buckets_.find(bucket);
  if (it != buckets_.end() && it->second.bytes == count * sizeof(float)) return it->second.choice;
  const comm::AlgoChoice c =
      prices_->get({ranks_, count, segment_bytes_, overhead_, split_}, [&] { return price(count); });
  return (buckets_[bucket] = Pick{count * sizeof(float), c}).choice;
}

comm::AlgoChoice AlgoSelection::price(std::size_t count) const {
  comm::AlgoChoice c = comm::choose_algo(model_.model, ranks_, count, segment_bytes_, overhead_, split_);
  if (request_) {
    // A fixed algorithm runs as asked: at the run's segments, priced there.
    const comm::ReduceAlgo algo = *request_;
    const auto i = static_cast<std::size_t>(algo);
    c.algo = algo;
    c.segment_bytes = segment_bytes_;
    c.segments_of[i] = segment_bytes_;
    c.predicted_us[i] = model_.model.predict_us(algo, ranks_, count, segment_bytes_, overhead_, split_);
  }
  return c;
}

double AlgoSelection::predicted_us(int bucket, std::size_t count) {
  const comm::AlgoChoice& c = choice(bucket, count);
  return c.predicted_us[static_cast<std::size_t>(c.algo)];
}

std::string AlgoSelection::describe() const {
  if (!request_ && split_) return "auto (cost model: ring, rhd or hier per bucket, its halves run apart)";
  if (!request_) return "auto (cost model: ring, rd, rhd or hier per bucket)";
  return comm::reduce_algo_title(*request_);
}

nlohmann::json AlgoSelection::summary() const {
  nlohmann::json counts = nlohmann::json::object();
  for (const comm::ReduceAlgo a : comm::kReduceAlgos) counts[enum_name(a)] = 0;
  nlohmann::json buckets = nlohmann::json::array();
  for (const auto& [b, p] : buckets_) {
    counts[enum_name(p.choice.algo)] = counts[enum_name(p.choice.algo)].get<int>() + 1;
    nlohmann::json predicted;
    // hier on one node is the ring, though one that re-seals its all-gather where the ring forwards
    // (Note [Each end of a step]): listed only where the model has nodes or prices each end.
    const bool hier = model_.model.node_ranks > 0 || model_.model.steps.has_value();
    for (std::size_t i = 0; i < comm::kReduceAlgos.size(); ++i)
      if (comm::kReduceAlgos[i] != comm::ReduceAlgo::Hier || hier)
        predicted[enum_name(comm::kReduceAlgos[i])] = p.choice.predicted_us[i];
    buckets.push_back({{"bucket", b},
                       {"bytes", p.bytes},
                       {"algorithm", enum_name(p.choice.algo)},
                       {"segment_bytes", p.choice.segment_bytes},
                       {"predicted_us", predicted}});
  }
  nlohmann::json model = cost_model_json(model_.model);
  model["source"] = model_.source;
  return {
      {"requested", comm::algo_name(request_)}, {"model", model}, {"counts", counts}, {"buckets", buckets}};
}

}  // namespace tt
