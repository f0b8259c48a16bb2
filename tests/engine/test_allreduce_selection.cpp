// The cost model behind --allreduce-algo auto (comm/allreduce/allreduce_cost.h) and its selection and
// calibration file (engine/gradients/allreduce_selection.h): the work each algorithm does matches
// docs/design.md §5's table, the pick follows the model (and ties keep the ring), a fit recovers known
// coefficients, the defaults carry the TEE's costs, and the calibration file round-trips and is refused
// (InputError, never another exception) in every malformed form.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "comm/allreduce/allreduce_cost.h"
#include "engine/gradients/allreduce_selection.h"
#include "engine/run/train_options.h"
#include "tests/common/fuzz.h"

namespace tt {
namespace {

using comm::ReduceAlgo;

TEST(AllreduceWork, MatchesTheDesignTable) {
  const std::size_t n = 4096;  // floats, 16 KiB: every range whole (no segments)
  const auto ring = comm::allreduce_work(ReduceAlgo::Ring, 4, n, 0);
  EXPECT_EQ(ring.messages, 6);                   // 2 (P-1)
  EXPECT_EQ(ring.wire_bytes, 6.0 * 1024 * 4);    // 2 (P-1) chunks of n/P
  EXPECT_EQ(ring.reduce_bytes, 3.0 * 1024 * 4);  // P-1 adds
  const auto rd = comm::allreduce_work(ReduceAlgo::Rd, 4, n, 0);
  EXPECT_EQ(rd.messages, 2);  // log2 P
  EXPECT_EQ(rd.wire_bytes, 2.0 * n * 4);
  const auto rhd = comm::allreduce_work(ReduceAlgo::Rhd, 4, n, 0);
  EXPECT_EQ(rhd.messages, 4);                          // 2 log2 P
  EXPECT_EQ(rhd.wire_bytes, 2.0 * (2048 + 1024) * 4);  // halves, then doubles back
  EXPECT_EQ(rhd.reduce_bytes, (2048.0 + 1024) * 4);
  // P = 3: the folding partner's path has the fold and the unfold around one exchange.
  EXPECT_EQ(comm::allreduce_work(ReduceAlgo::Rd, 3, n, 0).messages, 3);
  EXPECT_EQ(comm::allreduce_work(ReduceAlgo::Rhd, 3, n, 0).messages, 4);
  // Segments count as messages: 16 KiB ranges in 4 KiB segments.
  EXPECT_EQ(comm::allreduce_work(ReduceAlgo::Rd, 4, n, 4096).messages, 8);
  EXPECT_EQ(comm::allreduce_work(ReduceAlgo::Ring, 1, n, 0).messages, 0);
  EXPECT_EQ(comm::allreduce_work(ReduceAlgo::Rhd, 4, 0, 0).messages, 0);
}

TEST(AllreduceCost, PicksTheCheapestAndTiesKeepTheRing) {
  const comm::CostModel latency{.message_us = 50, .wire_ns_per_byte = 0.1, .reduce_ns_per_byte = 0.1};
  EXPECT_EQ(comm::choose_algo(latency, 8, 256, 0).algo, ReduceAlgo::Rd);  // 3 messages against 14
  // Large buffers at P = 4: rhd and the ring move the same bytes in 1 MiB segments (a tie: ring).
  EXPECT_EQ(comm::choose_algo(latency, 4, std::size_t{64} << 20, 1 << 20).algo, ReduceAlgo::Ring);
  // Without a per-message cost, rd's whole buffers per step lose to the ring's chunks.
  const comm::CostModel bytes_only{.message_us = 0, .wire_ns_per_byte = 1, .reduce_ns_per_byte = 0};
  EXPECT_EQ(comm::choose_algo(bytes_only, 4, 1 << 20, 0).algo, ReduceAlgo::Ring);
  // The TEE's fixed cost per sealed message moves the crossover towards fewer messages.
  const comm::CostModel plain{.message_us = 5, .wire_ns_per_byte = 0.25, .reduce_ns_per_byte = 0.25};
  const comm::CostModel sealed = comm::compose({.message_us = 5, .gbps = 4, .reduce_gbps = 4},
                                               {.message_us = 3000, .seal_gbps = 2.5, .open_gbps = 2.5});
  const std::size_t mid = std::size_t{1} << 18;  // 1 MiB
  EXPECT_NE(comm::choose_algo(plain, 4, mid, 0).algo, ReduceAlgo::Rd);
  EXPECT_EQ(comm::choose_algo(sealed, 4, mid, 0).algo, ReduceAlgo::Rd);
}

// --shard (Note [Shard handover], comm/allreduce/shard_handover.h): each algorithm is priced as its two
// halves. The ring's are its all-reduce's hops; rhd's add the handover rounds (at P = 4 the busiest rank,
// rank 0, sends its quarter and receives its ring chunk in one round, and the same back); rd's halves
// are rhd's, so auto never picks rd, and a latency-bound bucket goes to rhd.
TEST(AllreduceCost, SplitPricesTheHalvesWithTheirHandover) {
  const std::size_t n = 4096;
  const auto ring = comm::allreduce_work(ReduceAlgo::Ring, 4, n, 0, 0, 0, 0, true);
  EXPECT_EQ(ring.messages, comm::allreduce_work(ReduceAlgo::Ring, 4, n, 0).messages);
  EXPECT_EQ(ring.wire_bytes, comm::allreduce_work(ReduceAlgo::Ring, 4, n, 0).wire_bytes);
  const auto rhd = comm::allreduce_work(ReduceAlgo::Rhd, 4, n, 0, 0, 0, 0, true);
  EXPECT_EQ(rhd.messages, 4 + 1 + 1);  // 2 log2 P, one handover and one handback round
  EXPECT_EQ(rhd.wire_bytes, 2.0 * (2048 + 1024) * 4 + 2.0 * 1024 * 4);  // a quarter in each
  const auto rd = comm::allreduce_work(ReduceAlgo::Rd, 4, n, 0, 0, 0, 0, true);
  EXPECT_EQ(rd.messages, rhd.messages);
  EXPECT_EQ(rd.wire_bytes, rhd.wire_bytes);
  const comm::CostModel latency{.message_us = 50, .wire_ns_per_byte = 0.1, .reduce_ns_per_byte = 0.1};
  EXPECT_EQ(comm::choose_algo(latency, 8, 256, 0).algo, ReduceAlgo::Rd);
  const comm::AlgoChoice split = comm::choose_algo(latency, 8, 256, 0, 0, true);
  EXPECT_EQ(split.algo, ReduceAlgo::Rhd);
  EXPECT_EQ(split.predicted_us[static_cast<std::size_t>(ReduceAlgo::Rd)],
            split.predicted_us[static_cast<std::size_t>(ReduceAlgo::Rhd)]);
  AlgoSelection sel(std::nullopt, {latency, "test"}, 8, 0, 0, /*split=*/true);
  EXPECT_EQ(sel.pick(0, 256), ReduceAlgo::Rhd);
}

TEST(AllreduceCost, FitRecoversKnownCoefficients) {
  const comm::CostModel truth{.message_us = 12, .wire_ns_per_byte = 0.4, .reduce_ns_per_byte = 0.15};
  std::vector<comm::CostSample> samples;
  for (int p : {2, 3, 4}) {
    for (std::size_t n = 256; n <= (std::size_t{4} << 20); n *= 4) {
      for (ReduceAlgo a : comm::kReduceAlgos)
        samples.push_back({a, p, n, truth.predict_us(comm::allreduce_work(a, p, n, 1 << 20))});
    }
  }
  const comm::CostFit fit = comm::fit_cost_model(samples, 1 << 20);
  EXPECT_NEAR(fit.model.message_us, 12, 1e-6);
  EXPECT_NEAR(fit.model.wire_ns_per_byte, 0.4, 1e-9);
  EXPECT_NEAR(fit.model.reduce_ns_per_byte, 0.15, 1e-9);
  EXPECT_LT(fit.mean_abs_rel_error, 1e-9);
  EXPECT_THROW(comm::fit_cost_model(std::span(samples).first(2), 1 << 20), InputError);
}

// The transport's eager limit: messages longer than it count as rendezvous, and auto cuts a small
// bucket into eager segments where the model prices that lower, never cc's whole chunks.
TEST(AllreduceCost, EagerLimitCountsRendezvousAndCutsSmallMessages) {
  // rd at P = 2 on 8 KiB: one message of 8192 bytes, above a 4032-byte limit.
  const auto whole = comm::allreduce_work(ReduceAlgo::Rd, 2, 2048, 1 << 20, 4032, 0);
  EXPECT_EQ(whole.messages, 1);
  EXPECT_EQ(whole.rendezvous, 1);
  // In eager segments: 4032 + 4032 + 128 bytes, none above the limit; with a 64-byte header, two are.
  const auto cut = comm::allreduce_work(ReduceAlgo::Rd, 2, 2048, 4032, 4032, 0);
  EXPECT_EQ(cut.messages, 3);
  EXPECT_EQ(cut.rendezvous, 0);
  EXPECT_EQ(comm::allreduce_work(ReduceAlgo::Rd, 2, 2048, 4032, 4032, 64).rendezvous, 2);
  EXPECT_EQ(comm::allreduce_work(ReduceAlgo::Rd, 2, 2048, 1 << 20).rendezvous, 0);  // no limit modelled

  const comm::CostModel m{.message_us = 1.5,
                          .wire_ns_per_byte = 0.1,
                          .reduce_ns_per_byte = 0.25,
                          .eager_bytes = 4032,
                          .rendezvous_us = 4.3};
  EXPECT_EQ(m.eager_segment_bytes(0), 4032u);
  EXPECT_EQ(m.eager_segment_bytes(33), 3996u);  // whole floats that fit beside the overhead
  EXPECT_EQ(comm::CostModel{}.eager_segment_bytes(0), 0u);
  const comm::AlgoChoice small = comm::choose_algo(m, 2, 2048, 1 << 20);
  EXPECT_EQ(small.algo, ReduceAlgo::Rd);
  EXPECT_EQ(small.segment_bytes, 4032u);  // three eager messages beat one rendezvous
  EXPECT_NEAR(small.predicted_us[1], m.predict_us(cut), 1e-9);
  EXPECT_EQ(comm::choose_algo(m, 2, 2048, 0).segment_bytes, 0u);  // whole chunks stay whole (cc)
  // A large bucket keeps the run's segments: a thousand eager messages cost more than the rendezvous.
  EXPECT_EQ(comm::choose_algo(m, 2, std::size_t{1} << 20, 1 << 20).segment_bytes, std::size_t{1} << 20);
}

// Note [Rendezvous turns]: over a byte stream, two ranks exchanging rendezvous messages take turns from
// the second hop on; a ring of more than two, or eager messages, never do.
TEST(AllreduceCost, RendezvousExchangesTakeTurnsOnAByteStream) {
  const std::size_t floats = std::size_t{1} << 20, mib = std::size_t{1} << 20;  // 4 MiB
  const std::size_t eager = 65536 - 64;                                         // TCP's, less MPI's header
  // P = 2 ring in 1 MiB segments: the all-gather hop (the second) exchanges 2 MiB with the same peer.
  const auto two = comm::allreduce_work(ReduceAlgo::Ring, 2, floats, mib, eager);
  EXPECT_EQ(two.turn_bytes, 2.0 * mib);
  EXPECT_EQ(comm::allreduce_work(ReduceAlgo::Ring, 2, floats, 65408, eager).turn_bytes, 0);  // eager
  EXPECT_EQ(comm::allreduce_work(ReduceAlgo::Ring, 2, floats, mib).turn_bytes, 0);  // no limit modelled
  EXPECT_EQ(comm::allreduce_work(ReduceAlgo::Ring, 3, floats, mib, eager).turn_bytes, 0);  // two peers
  // Recursive doubling at P = 4: two exchanges of the whole buffer, the second taking turns.
  EXPECT_EQ(comm::allreduce_work(ReduceAlgo::Rd, 4, floats, mib, eager).turn_bytes, 4.0 * mib);

  comm::CostModel m{.message_us = 50, .wire_ns_per_byte = 40, .reduce_ns_per_byte = 0, .eager_bytes = eager};
  const double plain = m.predict_us(ReduceAlgo::Ring, 2, floats, mib);
  EXPECT_NEAR(plain, 4 * 50 + 4.0 * mib * 40 * 1e-3, 1e-6);  // no turns: the link's bytes once
  m.rendezvous_turns = true;
  EXPECT_NEAR(m.predict_us(ReduceAlgo::Ring, 2, floats, mib) - plain, 2.0 * mib * 40 * 1e-3, 1e-6);
  EXPECT_NEAR(m.predict_us(ReduceAlgo::Ring, 3, floats, mib),
              (comm::CostModel{.message_us = 50, .wire_ns_per_byte = 40, .eager_bytes = eager})
                  .predict_us(ReduceAlgo::Ring, 3, floats, mib),
              1e-6);
  EXPECT_NE(comm::describe(m).find("exchanges taking turns"), std::string::npos) << comm::describe(m);
}

TEST(AllreduceCost, FitRecoversTheRendezvousCost) {
  const comm::CostModel truth{.message_us = 1.5,
                              .wire_ns_per_byte = 0.1,
                              .reduce_ns_per_byte = 0.25,
                              .eager_bytes = 4032,
                              .rendezvous_us = 4.3};
  std::vector<comm::CostSample> samples;
  for (int p : {2, 4}) {
    for (std::size_t n = 256; n <= (std::size_t{1} << 20); n *= 2) {
      for (ReduceAlgo a : comm::kReduceAlgos)
        samples.push_back({a, p, n, truth.predict_us(comm::allreduce_work(a, p, n, 1 << 20, 4032))});
    }
  }
  const comm::CostFit fit = comm::fit_cost_model(samples, 1 << 20, 4032);
  EXPECT_NEAR(fit.model.message_us, 1.5, 1e-6);
  EXPECT_NEAR(fit.model.rendezvous_us, 4.3, 1e-6);
  EXPECT_EQ(fit.model.eager_bytes, 4032u);
  EXPECT_FALSE(fit.model.rendezvous_turns);
  EXPECT_LT(fit.mean_abs_rel_error, 1e-9);
  // Timed on a link whose exchanges take turns (Note [Rendezvous turns]): the same coefficients come back
  // when the fit counts the turn bytes, and the model it writes takes turns.
  comm::CostModel tcp = truth;
  tcp.rendezvous_turns = true;
  for (auto& sample : samples)
    sample.us = tcp.predict_us(comm::allreduce_work(sample.algo, sample.ranks, sample.count, 1 << 20, 4032));
  const comm::CostFit turns = comm::fit_cost_model(samples, 1 << 20, 4032, true);
  EXPECT_NEAR(turns.model.wire_ns_per_byte, 0.1, 1e-9);
  EXPECT_NEAR(turns.model.rendezvous_us, 4.3, 1e-6);
  EXPECT_TRUE(turns.model.rendezvous_turns);
  EXPECT_LT(turns.mean_abs_rel_error, 1e-9);
}

TEST(AllreduceSelection, DefaultsCarryTheTeeCosts) {
  TrainOptions plan;
  TeeSwitches off;
  const auto m_off = default_cost_model(plan.parallel, plan.compute, off, nullptr).model;
  plan.tee.settings.mode = TeeMode::Cc;
  TeeSwitches cc;
  cc.on = cc.cc = true;
  const auto m_cc = default_cost_model(plan.parallel, plan.compute, cc, nullptr).model;
  EXPECT_GT(m_cc.message_us, m_off.message_us);
  EXPECT_GT(m_cc.wire_ns_per_byte, m_off.wire_ns_per_byte);  // sealed and opened bytes
  plan.parallel.cc_transfer_us = 3000;
  EXPECT_NEAR(default_cost_model(plan.parallel, plan.compute, cc, nullptr).model.message_us,
              m_cc.message_us + 6000, 1e-9);
  // An emulated GPU's NVLink prices the wire under --link emulate.
  EmulatedGpu gpu{gpu_spec("h100")};
  plan = TrainOptions{};
  plan.parallel.link = LinkModel::Emulate;
  EXPECT_NEAR(default_cost_model(plan.parallel, plan.compute, off, &gpu).model.wire_ns_per_byte,
              1.0 / gpu.spec.nvlink_gbps, 1e-12);
  // The MPI link's eager limit and turns (Note [Rendezvous turns]): TCP between hosts takes turns,
  // shared memory does not, and an emulated GPU's modelled links have no eager protocol.
  const LinkFacts tcp{.across_hosts = true, .eager_limit = 65536, .name = "TCP"};
  const LinkFacts shm{.across_hosts = false, .eager_limit = 4096, .name = "shared memory"};
  const auto over_tcp = default_cost_model(TrainOptions{}.parallel, plan.compute, off, nullptr, tcp).model;
  EXPECT_EQ(over_tcp.eager_bytes, 65536u - kMpiHeaderBytes);
  EXPECT_TRUE(over_tcp.rendezvous_turns);
  EXPECT_FALSE(
      default_cost_model(TrainOptions{}.parallel, plan.compute, off, nullptr, shm).model.rendezvous_turns);
  const auto emulated = default_cost_model(plan.parallel, plan.compute, off, &gpu, tcp).model;
  EXPECT_EQ(emulated.eager_bytes, 0u);
  EXPECT_FALSE(emulated.rendezvous_turns);
}

// A GPU in CC mode (--cc-hardware): the model prices each crossing as the emulated platform charges it,
// its fixed cost from the table and its bytes at the copy plateau (beyond the host's own AES-GCM pass),
// and fast's GPU-sealed ring crosses too.
TEST(AllreduceSelection, CcHardwarePricesTheCrossings) {
  EmulatedGpu gpu{gpu_spec("h100")};
  const EmulatedGpu off = gpu;  // the same GPU with CC off
  gpu.cc = cc_costs(CcHardware::H100Pageable);
  TrainOptions plan;
  plan.compute.mode = ComputeMode::Emulated;
  TeeSwitches cc;
  cc.on = cc.cc = true;
  const auto plain = default_cost_model(plan.parallel, plan.compute, cc, &off).model;
  const auto m = default_cost_model(plan.parallel, plan.compute, cc, &gpu).model;
  EXPECT_NEAR(m.message_us - plain.message_us, 2 * gpu.cc.crossing_us(), 1e-9);
  // seal + open: each the copy's ns/B in place of one host pass at 3.36 GB/s
  EXPECT_NEAR(m.wire_ns_per_byte - plain.wire_ns_per_byte, (1 / 2.519 - 1 / 3.36) + (1 / 2.617 - 1 / 3.36),
              1e-9);
  TeeSwitches fast;
  fast.on = fast.device_crypto = true;
  EXPECT_GT(default_cost_model(plan.parallel, plan.compute, fast, &gpu).model.message_us,
            default_cost_model(plan.parallel, plan.compute, fast, &off).model.message_us + 2 * 35.0);
}

// In virtual time the model prices sealing as the run will book it: the modelled host's AES-GCM
// (--host-aead-gbps, one core per unpipelined hop, both ends' --host-message-us), the same
// CryptoCostModel the sealing channel charges.
TEST(AllreduceSelection, VirtualTimePricesTheModelledHost) {
  EmulatedGpu gpu{gpu_spec("h100")};
  TrainOptions plan;
  plan.compute.mode = ComputeMode::Emulated;
  plan.tee.settings.mode = TeeMode::Cc;
  plan.compute.host.aead_gbps = 2.0;
  plan.compute.host.crypto_cores = 4;
  plan.compute.host.message_us = 7;
  TeeSwitches cc;
  cc.on = cc.cc = true;
  const platform::CryptoCostModel crypto = modelled_crypto(plan.compute.host, cc, gpu);
  EXPECT_EQ(crypto.aead_gbps, 2.0);
  EXPECT_EQ(crypto.cores, 4);
  TrainOptions plain;
  plain.compute.mode = ComputeMode::Emulated;
  const auto off_wire = default_cost_model(plain.parallel, plain.compute, TeeSwitches{}, &gpu).model;
  const auto m = default_cost_model(plan.parallel, plan.compute, cc, &gpu).model;
  EXPECT_NEAR(m.wire_ns_per_byte - off_wire.wire_ns_per_byte, 2 * (1.0 / 2.0),
              1e-9);  // seal + open, one core
  EXPECT_NEAR(m.message_us - off_wire.message_us, 2 * 7.0, 1e-9);
  cc.pipeline = true;  // segments spread over the host's 4 cores
  EXPECT_NEAR(default_cost_model(plan.parallel, plan.compute, cc, &gpu).model.wire_ns_per_byte -
                  off_wire.wire_ns_per_byte,
              2 * (1.0 / 8.0), 1e-9);
  plan.compute.host.bounce_reencrypt = true;  // twice the bytes through the cipher
  EXPECT_NEAR(default_cost_model(plan.parallel, plan.compute, cc, &gpu).model.wire_ns_per_byte -
                  off_wire.wire_ns_per_byte,
              2 * (2.0 / 8.0), 1e-9);
  // Wall-clock emulation keeps the measured machine's defaults.
  plan.compute.time = TimeModel::Wall;
  EXPECT_NE(default_cost_model(plan.parallel, plan.compute, cc, &gpu).model.wire_ns_per_byte -
                off_wire.wire_ns_per_byte,
            2 * (2.0 / 8.0));
}

// One node of emulated GPUs (no --gpus-per-node) in virtual time: priced at each end of every step as
// the run charges it (Note [Each end of a step]): each link the GPU's NVLink with no latency, each
// message by its route, so that on h100-ppcie nothing is sealed: fast's forwarded all-gather, whose
// group never leaves the node, goes in clear as the node's other messages do.
TEST(AllreduceSelection, OneNodeOfEmulatedGpusIsPricedAtEachEnd) {
  EmulatedGpu gpu{gpu_spec("h100")};
  gpu.cc = cc_costs(CcHardware::H100Ppcie);
  TrainOptions plan;
  plan.compute.mode = ComputeMode::Emulated;
  const std::size_t count = 1 << 20;  // floats, a quarter a rank at P = 4
  const double quarter = count * sizeof(float) / 4.0;
  const auto ring_us = [&](const TeeSwitches& ts) {
    return default_cost_model(plan.parallel, plan.compute, ts, &gpu)
        .model.predict_us(ReduceAlgo::Ring, 4, count, 0);
  };
  // 6 hops of a quarter on NVLink, 3 of them added in at a third of HBM's rate.
  const double off = ring_us(TeeSwitches{});
  EXPECT_NEAR(off, (6 * quarter / gpu.spec.nvlink_gbps + 3 * quarter * 3 / gpu.spec.hbm_gbps) * 1e-3, 1e-6);
  TeeSwitches cc;
  cc.on = cc.cc = true;
  EXPECT_NEAR(ring_us(cc), off, 1e-9);  // a node's messages in clear
  TeeSwitches fast;
  fast.on = fast.device_crypto = fast.forward_ag = true;
  EXPECT_NEAR(ring_us(fast), off, 1e-9);  // its forwarded all-gather crosses no bounce buffer
  // With nodes, a group message may leave its node: sealed, on the path out of it.
  const Topology nodes{.gpus_per_node = 2, .intra = LinkClass::Nvlink, .inter = LinkClass::InfinibandNdr};
  EXPECT_FALSE(message_route(gpu.cc, Topology{}, 0, comm::kAnyRank).sealed());
  EXPECT_TRUE(message_route(gpu.cc, nodes, 0, comm::kAnyRank).sealed());
  // ... but not out of the only node (G = P); with two nodes it does.
  EXPECT_FALSE(message_route(gpu.cc, Topology{.gpus_per_node = 4, .world = 4}, 0, comm::kAnyRank).sealed());
  EXPECT_TRUE(message_route(gpu.cc, Topology{.gpus_per_node = 2, .world = 4}, 0, comm::kAnyRank).sealed());
  // Wall-clock emulation over real links keeps the fitted terms.
  plan.compute.time = TimeModel::Wall;
  EXPECT_FALSE(default_cost_model(plan.parallel, plan.compute, cc, &gpu).model.steps.has_value());
}

TEST(AllreduceSelection, PicksPerBucketAndReportsWhy) {
  const CostModelSource src{{.message_us = 100, .wire_ns_per_byte = 0.1, .reduce_ns_per_byte = 0.1}, "test"};
  AlgoSelection autos(std::nullopt, src, 8, 1 << 20);
  EXPECT_EQ(autos.pick(0, 64), ReduceAlgo::Rd);
  EXPECT_EQ(autos.pick(1, std::size_t{64} << 20), ReduceAlgo::Ring);
  EXPECT_EQ(autos.pick(0, 64), ReduceAlgo::Rd);  // remembered
  const auto s = autos.summary();
  EXPECT_EQ(s["requested"], "auto");
  EXPECT_EQ(s["counts"]["rd"], 1);
  EXPECT_EQ(s["counts"]["ring"], 1);
  EXPECT_EQ(s["buckets"].size(), 2U);
  EXPECT_EQ(s["buckets"][0]["algorithm"], "rd");
  EXPECT_GT(s["buckets"][0]["predicted_us"]["ring"].get<double>(),
            s["buckets"][0]["predicted_us"]["rd"].get<double>());
  EXPECT_EQ(s["model"]["source"], "test");
  AlgoSelection fixed(comm::ReduceAlgo::Rhd, src, 8, 1 << 20);
  EXPECT_EQ(fixed.pick(0, 64), ReduceAlgo::Rhd);
  EXPECT_EQ(fixed.describe(), "recursive halving-doubling");
  EXPECT_EQ(AlgoSelection(comm::ReduceAlgo::Ring, src, 2, 0).describe(), "ring");
}

TEST(AllreduceSelection, CalibrationFileRoundTripsPerMode) {
  testing::FuzzDir dir;
  const std::string path = dir / "cost.json";
  const comm::CostFit off{{.message_us = 9, .wire_ns_per_byte = 0.3, .reduce_ns_per_byte = 0.2}, 0.1};
  const comm::CostFit cc{{.message_us = 40, .wire_ns_per_byte = 1.2, .reduce_ns_per_byte = 0.2}, 0.2};
  save_cost_model(path, TeeMode::Off, off, {{"ranks", 4}});
  save_cost_model(path, TeeMode::Cc, cc, {{"ranks", 4}});
  EXPECT_EQ(load_cost_model(path, TeeMode::Off).model.message_us, 9);
  EXPECT_EQ(load_cost_model(path, TeeMode::Cc).model.wire_ns_per_byte, 1.2);
  try {
    load_cost_model(path, TeeMode::Fast);
    ADD_FAILURE() << "no fast model, yet it loaded";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no model for --tee fast"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("bench allreduce --tee fast --calibrate"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(load_cost_model(dir / "missing.json", TeeMode::Off), InputError);
  // The eager limit and its rendezvous cost travel with the model; a bad one is refused.
  const comm::CostFit eager{{.message_us = 1.5,
                             .wire_ns_per_byte = 0.1,
                             .reduce_ns_per_byte = 0.2,
                             .eager_bytes = 4032,
                             .rendezvous_us = 4},
                            0.1};
  save_cost_model(path, TeeMode::Fast, eager, {{"ranks", 2}});
  EXPECT_EQ(load_cost_model(path, TeeMode::Fast).model.eager_bytes, 4032u);
  EXPECT_EQ(load_cost_model(path, TeeMode::Fast).model.rendezvous_us, 4);
  EXPECT_EQ(load_cost_model(path, TeeMode::Off).model.eager_bytes, 0u);  // a file without one: none
  // ... unless the link reports one: TCP between hosts, whose exchanges take turns (Note [Rendezvous
  // turns]); a model that says otherwise is kept.
  const LinkFacts tcp{.across_hosts = true, .eager_limit = 65536, .name = "TCP"};
  EXPECT_EQ(load_cost_model(path, TeeMode::Off, tcp).model.eager_bytes, 65536u - kMpiHeaderBytes);
  EXPECT_TRUE(load_cost_model(path, TeeMode::Off, tcp).model.rendezvous_turns);
  EXPECT_EQ(load_cost_model(path, TeeMode::Fast, tcp).model.eager_bytes, 4032u);
  EXPECT_FALSE(load_cost_model(path, TeeMode::Off).model.rendezvous_turns);
  {
    nlohmann::json said = nlohmann::json::parse(std::ifstream(path));
    said["models"]["off"]["rendezvous_turns"] = false;
    std::ofstream(path) << said.dump();
  }
  EXPECT_FALSE(load_cost_model(path, TeeMode::Off, tcp).model.rendezvous_turns);
  {
    nlohmann::json said = nlohmann::json::parse(std::ifstream(path));
    said["models"]["off"]["rendezvous_turns"] = "yes";
    std::ofstream(path) << said.dump();
  }
  EXPECT_THROW(load_cost_model(path, TeeMode::Off, tcp), InputError);
  nlohmann::json doc = nlohmann::json::parse(std::ifstream(path));
  doc["models"]["fast"]["eager_bytes"] = -1;
  std::ofstream(path) << doc.dump();
  EXPECT_THROW(load_cost_model(path, TeeMode::Fast), InputError);
}

// Any bytes in the file: a model, or InputError (exit 2) — never a json exception reaching the user.
TEST(AllreduceSelection, MalformedCalibrationFilesAreInputErrors) {
  testing::FuzzDir dir;
  const std::string path = dir / "cost.json";
  save_cost_model(path, TeeMode::Off,
                  {{.message_us = 9, .wire_ns_per_byte = 0.3, .reduce_ns_per_byte = 0.2}, 0.1},
                  {{"ranks", 4}});
  std::ifstream in(path);
  const std::string valid((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<testing::FuzzInput> inputs = testing::fuzz_inputs(valid, {});
  for (const char* typed :
       {R"({"format": 7})", R"({"format": "teetrain-allreduce-cost-v1", "models": []})",
        R"({"format": "teetrain-allreduce-cost-v1", "models": {"off": {"message_us": "x"}}})",
        R"({"format": "teetrain-allreduce-cost-v1", "models": {"off": 3}})", "[]", "null"})
    inputs.push_back({typed, typed});
  int refused = 0;
  for (const auto& f : inputs) {
    {
      std::ofstream out(path, std::ios::trunc);
      out << f.bytes;
    }
    const int rc = testing::run_parser([&] { (void)load_cost_model(path, TeeMode::Off); }, f.what);
    EXPECT_TRUE(rc == 0 || rc == 2) << f.what;
    refused += rc == 2;
    // Writing into a malformed file refuses too, never a json exception.
    const int wrc = testing::run_parser([&] { save_cost_model(path, TeeMode::Cc, {}, {}); }, f.what);
    EXPECT_TRUE(wrc == 0 || wrc == 2) << f.what;
  }
  EXPECT_GT(refused, 100);
}

}  // namespace
}  // namespace tt

namespace tt {
namespace {

// A topology (core/emulated/topology.h): the hierarchical algorithm's inter-node steps carry 1/G of the
// buffer where every step of a flat ring over several nodes runs at the inter-node link's pace (Note
// [Steps at the slowest link]); on one node hier is the ring's work and a tie keeps the ring.
TEST(AllreduceCost, TopologyPricesStepsBetweenNodes) {
  const std::size_t n = std::size_t{16} << 20;  // 64 MiB
  const auto ring = comm::allreduce_work(ReduceAlgo::Ring, 16, n, 0, 0, 0, 8);
  const auto hier = comm::allreduce_work(ReduceAlgo::Hier, 16, n, 0, 0, 0, 8);
  EXPECT_EQ(ring.inter_messages, ring.messages);  // every ring step has a message between nodes
  EXPECT_EQ(hier.messages, 2 * 7 + 2 * 1);        // 2 (G - 1) inside, 2 (N - 1) between
  EXPECT_EQ(hier.inter_messages, 2);
  EXPECT_EQ(hier.inter_wire_bytes, 2.0 * n * 4 / 16);  // a node chunk's halves
  EXPECT_EQ(comm::allreduce_work(ReduceAlgo::Hier, 16, n, 0, 0, 0, 0).messages, ring.messages);

  EmulatedGpu gpu{gpu_spec("h100")};
  gpu.topology = {.gpus_per_node = 8, .intra = LinkClass::Nvlink, .inter = LinkClass::InfinibandNdr};
  TrainOptions plan;
  plan.compute.mode = ComputeMode::Emulated;
  const comm::CostModel m = default_cost_model(plan.parallel, plan.compute, TeeSwitches{}, &gpu).model;
  EXPECT_EQ(m.node_ranks, 8);
  EXPECT_NEAR(m.inter_message_us, 14.0 - 3.4, 1e-12);
  EXPECT_NEAR(m.inter_wire_ns_per_byte, 1.0 / 50 - 1.0 / gpu.spec.nvlink_gbps, 1e-12);
  // P = 16 in nodes of 8: hier moves the ring's bytes over NVLink and 1/8 of them over InfiniBand.
  const comm::AlgoChoice two = comm::choose_algo(m, 16, n, 0);
  EXPECT_LT(two.predicted_us[3], two.predicted_us[0] / 2);
  // Halving-doubling on node-major ranks crosses nodes only at its distance-8 steps, with the same
  // bytes as hier in fewer messages: at a power of two it is hierarchical already, and auto takes it.
  EXPECT_EQ(two.algo, ReduceAlgo::Rhd);
  // Three nodes (P = 24): halving-doubling's folds and pairs straddle nodes; hier is the cheapest.
  EXPECT_EQ(comm::choose_algo(m, 24, n, 0).algo, ReduceAlgo::Hier);
  // One node: hier is the ring's work exactly.
  comm::CostModel one = m;
  one.node_ranks = 0;
  const comm::AlgoChoice flat = comm::choose_algo(one, 16, n, 0);
  EXPECT_EQ(flat.predicted_us[3], flat.predicted_us[0]);
  EXPECT_NE(flat.algo, ReduceAlgo::Hier);
}

// Note [Each end of a step]: a flat ring of 2 nodes of 4 whose messages between nodes alone are sealed
// (h100-ppcie's shape), 100 us to seal at the sender and 100 us to open at the receiver, links free:
// ranks 3 and 7 seal one message a step, ranks 4 and 0 open one, so once the ring runs a step costs
// max(seal, open), and its 14 steps 100 us each plus one open: 1500 us, not 14 x (seal + open).
TEST(AllreduceCost, EachEndOfAStepHoldsItsOwnRank) {
  comm::CostModel m;
  m.node_ranks = 4;
  m.steps = comm::StepCosts{};
  m.steps->ends[static_cast<std::size_t>(comm::Route::Between)] = {.seal = {.us = 100, .ns_per_byte = 0},
                                                                   .open = {.us = 100, .ns_per_byte = 0}};
  const std::size_t n = 8 * 1024;
  EXPECT_DOUBLE_EQ(m.predict_us(ReduceAlgo::Ring, 8, n, 0), 1500.0);
  // Sealed at every step (h100-pinned's shape): each rank seals and opens at every step.
  m.steps->ends[static_cast<std::size_t>(comm::Route::Inside)] = m.steps->ends[1];
  EXPECT_DOUBLE_EQ(m.predict_us(ReduceAlgo::Ring, 8, n, 0), 14 * 200.0);
  // fast's forwarded all-gather seals once, at its first step; its group messages take their own route.
  m.steps->forward_all_gather = true;
  m.steps->ends[static_cast<std::size_t>(comm::Route::Group)] = m.steps->ends[1];
  EXPECT_DOUBLE_EQ(m.predict_us(ReduceAlgo::Ring, 8, n, 0), 8 * 200.0 + 6 * 100.0);
}

// Note [Messages inside a node]: the model prices each hop by the route its messages take in the run
// (message_route): on h100-ppcie a step inside a node is not sealed and one between nodes is sealed
// through H100 CC's bounce buffers; Blackwell's fast crosses the encrypted NVLink's set-up inside a node
// and the host bridge's copies (330 us each end) out of it.
TEST(AllreduceCost, EachHopPricedByItsRoute) {
  EmulatedGpu gpu{gpu_spec("h100")};
  gpu.topology = {.gpus_per_node = 2, .intra = LinkClass::Nvlink, .inter = LinkClass::InfinibandNdr};
  TrainOptions plan;
  plan.compute.mode = ComputeMode::Emulated;
  const comm::CostModel off = default_cost_model(plan.parallel, plan.compute, TeeSwitches{}, &gpu).model;
  TeeSwitches cc;
  cc.on = cc.cc = true;
  gpu.cc = cc_costs(CcHardware::H100Pinned);
  const comm::CostModel pinned = default_cost_model(plan.parallel, plan.compute, cc, &gpu).model;
  gpu.cc = cc_costs(CcHardware::H100Ppcie);
  const comm::CostModel ppcie = default_cost_model(plan.parallel, plan.compute, cc, &gpu).model;
  // Inside a node: TEE off's costs exactly; between nodes: H100 CC's sealed hop.
  EXPECT_EQ(ppcie.message_us, off.message_us);
  EXPECT_EQ(ppcie.wire_ns_per_byte, off.wire_ns_per_byte);
  EXPECT_NEAR(ppcie.message_us + ppcie.inter_message_us, pinned.message_us + pinned.inter_message_us, 1e-9);
  EXPECT_NEAR(ppcie.wire_ns_per_byte + ppcie.inter_wire_ns_per_byte,
              pinned.wire_ns_per_byte + pinned.inter_wire_ns_per_byte, 1e-12);
  // Without nodes every message stays inside the one node: nothing is sealed.
  gpu.topology = {};
  EXPECT_EQ(default_cost_model(plan.parallel, plan.compute, cc, &gpu).model.message_us,
            default_cost_model(plan.parallel, plan.compute, TeeSwitches{}, &gpu).model.message_us);

  gpu.topology = {.gpus_per_node = 2, .intra = LinkClass::Nvlink, .inter = LinkClass::InfinibandNdr};
  gpu.cc = cc_costs(CcHardware::Blackwell);
  TeeSwitches fast;
  fast.on = fast.device_crypto = true;
  const comm::CostModel bw = default_cost_model(plan.parallel, plan.compute, fast, &gpu).model;
  const comm::CostModel bw_off = default_cost_model(plan.parallel, plan.compute, TeeSwitches{}, &gpu).model;
  // Between nodes: 330 us at each end instead of NVLink's 20.05 + 20.87 us set-up, and the bridge's bytes.
  EXPECT_NEAR(bw.inter_message_us - bw_off.inter_message_us, 2 * 330.0 - (20.05 + 20.87), 1e-9);
  EXPECT_NEAR(bw.inter_wire_ns_per_byte - bw_off.inter_wire_ns_per_byte,
              1 / (42.17 * 0.211) + 1 / (43.49 * 0.203) - (1 / 510.0 - 1 / gpu.spec.nvlink_gbps), 1e-9);
}

// hier's all-gathers under forward wire (Note [Sub-group streams], comm/channel.h): the owner's hop of
// each sub-group's ring seals, the others forward. P = 16 in nodes of 8: of the node's 7 all-gather
// hops 6 forward; the 2 nodes' all-gather is one hop, sealed. A forwarded message is priced without
// the sender's seal (its per-message cost and bytes at the seal rate), only where fast forwards.
TEST(AllreduceCost, HierForwardedHopsSkipTheSendersSeal) {
  const std::size_t n = std::size_t{16} << 20;  // 64 MiB
  const auto hier = comm::allreduce_work(ReduceAlgo::Hier, 16, n, 0, 0, 0, 8);
  EXPECT_EQ(hier.forwarded_messages, 6);
  EXPECT_EQ(hier.forwarded_bytes, 6.0 * n * 4 / 8);  // node chunks
  EXPECT_EQ(hier.inter_forwarded_messages, 0);
  EXPECT_EQ(comm::allreduce_work(ReduceAlgo::Hier, 16, n, 0, 0, 0, 4).inter_forwarded_messages, 2);
  EXPECT_EQ(comm::allreduce_work(ReduceAlgo::Ring, 16, n, 0, 0, 0, 8).forwarded_messages, 0);

  EmulatedGpu gpu{gpu_spec("h100")};
  gpu.topology = {.gpus_per_node = 8, .intra = LinkClass::Nvlink, .inter = LinkClass::InfinibandNdr};
  gpu.cc = cc_costs(CcHardware::Blackwell);
  TrainOptions plan;
  plan.compute.mode = ComputeMode::Emulated;
  TeeSwitches fast;
  fast.on = fast.device_crypto = true;
  const comm::CostModel resealing = default_cost_model(plan.parallel, plan.compute, fast, &gpu).model;
  EXPECT_EQ(resealing.forward_message_us, 0);
  fast.forward_ag = true;
  const comm::CostModel m = default_cost_model(plan.parallel, plan.compute, fast, &gpu).model;
  const platform::CryptoCostModel crypto = modelled_crypto(plan.compute.host, fast, gpu);
  EXPECT_NEAR(m.forward_message_us, crypto.per_message_us + gpu.cc.peer.sender_us, 1e-9);
  EXPECT_GT(m.forward_ns_per_byte, 0);
  EXPECT_NEAR(resealing.predict_us(hier) - m.predict_us(hier),
              6 * m.forward_message_us + 6.0 * n * 4 / 8 * m.forward_ns_per_byte * 1e-3, 1e-6);
}

// AlgoPrices: a run's virtual ranks share their pricing. Eight threads ask for the same bucket size at
// once; it is priced once, and every rank's selection gets the choice its own pricing would give.
TEST(AlgoPrices, EachSizeIsPricedOnceForAllRanks) {
  comm::CostModel m;
  m.message_us = 10;
  m.wire_ns_per_byte = 0.1;
  m.reduce_ns_per_byte = 0.05;
  const comm::AlgoChoice own = comm::choose_algo(m, 1024, 4 << 20, 1 << 20, 32, false);
  auto prices = std::make_shared<AlgoPrices>();
  std::atomic<int> priced{0};
  std::vector<comm::AlgoChoice> got(8);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 8; ++r) {
    ranks.emplace_back([&, r] {
      got[r] = prices->get({1024, std::size_t{4} << 20, std::size_t{1} << 20, 32, false}, [&] {
        ++priced;
        return comm::choose_algo(m, 1024, 4 << 20, 1 << 20, 32, false);
      });
    });
  }
  for (std::thread& t : ranks) t.join();
  EXPECT_EQ(priced.load(), 1);
  for (const comm::AlgoChoice& c : got) {
    EXPECT_EQ(c.algo, own.algo);
    EXPECT_EQ(c.predicted_us, own.predicted_us);
  }
  // Another size (or split) is its own price; a selection built on the cache picks as one without it.
  prices->get({1024, std::size_t{4} << 20, std::size_t{1} << 20, 32, true}, [&] {
    ++priced;
    return comm::choose_algo(m, 1024, 4 << 20, 1 << 20, 32, true);
  });
  EXPECT_EQ(priced.load(), 2);
  AlgoSelection shared(std::nullopt, CostModelSource{m, "test"}, 16, 1 << 20, 32, false, prices);
  AlgoSelection alone(std::nullopt, CostModelSource{m, "test"}, 16, 1 << 20, 32, false);
  for (std::size_t n : {std::size_t{1000}, std::size_t{1} << 22}) {
    EXPECT_EQ(shared.choice(0, n).algo, alone.choice(0, n).algo);
    EXPECT_EQ(shared.choice(0, n).predicted_us, alone.choice(0, n).predicted_us);
  }
}

}  // namespace
}  // namespace tt
