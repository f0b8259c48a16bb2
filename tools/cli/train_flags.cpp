#include "tools/cli/train_flags.h"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "core/emulated/emulated_gpu.h"
#include "engine/run/platform_profile.h"
#include "tools/cli/model_flags.h"
#include "tools/cli/tee_options.h"
#include "tools/cli/validators.h"

namespace tt::cli {

namespace {

void add_data_options(CLI::App* cmd, TrainOptions& o) {
  auto* g = cmd->add_option_group("data and steps");
  g->add_option(
       "--data", o.data.path,
       "Token shards: a prefix (<data>_train.bin/_val.bin), a directory of llm.c shards, a file or a glob")
      ->capture_default_str();
  auto* steps =
      g->add_option("--steps", o.schedule.steps, "Optimizer steps to run (in total, counting resumed ones)")
          ->check(positive())
          ->capture_default_str();
  g->add_option("--epochs", o.schedule.epochs,
                "Image data: train this many passes over the training split instead of --steps (steps = "
                "epochs x ceil(images / global batch))")
      ->check(positive())
      ->excludes(steps);
  g->add_option("--batch", o.schedule.batch,
                "Sequences per rank and micro-step (global batch = batch x ranks x grad-accum)")
      ->check(positive())
      ->capture_default_str();
  g->add_option("--seq", o.schedule.seq, "Tokens per sequence (at most the model's context)")
      ->check(positive())
      ->capture_default_str();
  g->add_option("--grad-accum", o.schedule.grad_accum,
                "Micro-steps accumulated per optimizer step (communicates on the last)")
      ->check(positive())
      ->capture_default_str();
  g->add_option("--seed", o.schedule.seed, "Seed for initialisation and data order")->capture_default_str();
  g->add_option("--threads", o.compute.threads,
                "Compute threads per rank, the same on every rank (0 = cores / ranks on a host, the smallest "
                "share over the hosts)")
      ->check(non_negative())
      ->capture_default_str();
  add_enum_option(
      g, "--device", o.compute.device,
      "Where forward/backward run: cpu, or cuda (one GPU per rank: rank modulo visible GPUs). With "
      "cuda, --tee off and fast reduce gradients in the device ring (NCCL, or host bounce buffers "
      "when ranks share a GPU); cc stages them through the host");
  g->add_flag("--tf32", o.compute.tf32,
              "CUDA: allow TF32 tensor-core matmuls (default exact FP32, comparable with the CPU)");
  g->add_option("--expect-dataset", o.data.expect_dataset,
                "Refuse (exit 3) unless every split of the data opened has this manifest digest (SHA-256, "
                "as `seal-data` prints it): the data owner pins the dataset")
      ->check(sha256_hex());
  g->add_option("--ingress-gbps", o.data.ingress_gbps,
                "Cap sealed batch ingress at this many GB/s (3 emulates H100 CC; 0 = none)")
      ->check(non_negative())
      ->capture_default_str();
}

void add_optimizer_options(CLI::App* cmd, TrainOptions& o) {
  auto* opt = cmd->add_option_group("optimizer");
  add_enum_option(opt, "--optimizer", o.schedule.optimizer.kind, "Optimizer");
  opt->add_option("--lr", o.schedule.lr, "Peak learning rate")->check(positive())->capture_default_str();
  opt->add_option("--min-lr-frac", o.schedule.min_lr_frac,
                  "Final LR of the cosine schedule as a fraction of --lr")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  opt->add_option("--warmup", o.schedule.warmup, "Linear warmup steps")
      ->check(non_negative())
      ->capture_default_str();
  add_enum_option(opt, "--schedule", o.schedule.schedule, "LR schedule");
  opt->add_option("--grad-clip", o.schedule.grad_clip, "Clip the global gradient norm to this (0 = off)")
      ->check(non_negative())
      ->capture_default_str();
  opt->add_option("--weight-decay", o.schedule.optimizer.weight_decay,
                  "Weight decay on matrices (not biases or norms)")
      ->check(non_negative())
      ->capture_default_str();
  opt->add_option("--momentum", o.schedule.optimizer.momentum, "SGD momentum")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  opt->add_option("--beta1", o.schedule.optimizer.beta1, "AdamW beta1")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  opt->add_option("--beta2", o.schedule.optimizer.beta2, "AdamW beta2")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
}

void add_reporting_options(CLI::App* cmd, TrainOptions& o) {
  auto* out = cmd->add_option_group("reporting and checkpoints");
  out->add_option("--val-every", o.schedule.val_every, "Validate every N steps (0 = only at the end)")
      ->check(non_negative())
      ->capture_default_str();
  out->add_option("--val-batches", o.schedule.val_batches, "Batches per validation (shared out across ranks)")
      ->check(non_negative())
      ->capture_default_str();
  out->add_option("--metrics", o.output.metrics, "Write per-step metrics as JSON lines to FILE (rank 0)");
  out->add_option("--summary", o.output.summary, "Write the end-of-run summary as JSON to FILE (rank 0)");
  out->add_flag("--no-progress", o.output.no_progress, "No live progress line");
  out->add_flag(
      "--quiet,-q", o.output.quiet,
      "Only the result line (`done: ...`, on stdout), warnings, errors and the --adversary's lines: no "
      "banner, progress line, notes or phase table");
  out->add_option("--save-every", o.checkpoints.save_every,
                  "Checkpoint every N steps and at the end (0 = never)")
      ->check(non_negative())
      ->capture_default_str();
  out->add_option("--ckpt-dir", o.checkpoints.dir, "Checkpoint directory (one step_XXXXXXXX/ per checkpoint)")
      ->capture_default_str();
  out->add_option(
         "--keep", o.checkpoints.keep,
         "Checkpoints of this run to keep: older saves of its own lineage, verified along the "
         "manifests' hash chain, are deleted; anything else in --ckpt-dir is left alone (with a warning)")
      ->check(positive())
      ->capture_default_str();
  out->add_option("--resume", o.checkpoints.resume,
                  "Resume from a checkpoint directory (a step dir, or the newest in a --ckpt-dir)");
  add_enum_option(out, "--ckpt-layout", o.checkpoints.layout,
                  "What a save writes: sharded (each rank writes its own optimizer shard, and at --shard "
                  "params its parameter shard in the same file; rank 0 the whole parameters below "
                  "--shard params, and one manifest binding them all; the default under --shard; every "
                  "rank must see --ckpt-dir) or whole (rank 0 writes the whole model and optimizer "
                  "state, as DDP does; the default without --shard). Either resumes at any world size "
                  "and stage; `ckpt export` turns either into one model file");
  out->add_option(
         "--expect-checkpoint", o.checkpoints.expect,
         "Refuse (exit 3) unless the checkpoint resumed from has this manifest digest (SHA-256 of its "
         "manifest file, as `ckpt inspect` prints it)")
      ->check(sha256_hex());
}

// How an emulated run's ranks are had: threads of a process, and a modelled ring larger than the ranks run.
void add_virtual_rank_options(CLI::Option_group* dp, ParallelOptions& p) {
  dp->add_option("--ranks-per-process", p.ranks_per_process,
                 "Ranks each process hosts as threads (emulated virtual-time runs): `mpirun -np N` gives "
                 "N x this many ranks, with the same handshake, agreement and sealed tokens between them and "
                 "the same virtual times as one process per rank (docs/reproducing.md, \"Virtual ranks\")")
      ->check(positive())
      ->capture_default_str();
  dp->add_option(
        "--model-ranks", p.model_ranks,
        "Model a ring of this many ranks with the ranks the run has (emulated virtual time, "
        "--allreduce-algo ring, any --shard): each rank plays its own position in the larger ring, "
        "whose chunks and hops every message has, and holds its shard of it (updating, in cost, "
        "the slowest shard of the ranks it stands for), so P = 1,024 runs on 8 or 16 ranks as threads; "
        "the ranks run must divide it (with --gpus-per-node G and more than G modelled: a multiple "
        "of G, at least 2 G). The step time is the full ring's (docs/reproducing.md, \"Folded "
        "ring\"); 0 = the ring is the ranks run")
      ->check(non_negative())
      ->capture_default_str();
}

void add_parallel_options(CLI::App* cmd, TrainOptions& o) {
  auto* dp = cmd->add_option_group("data parallelism (under mpirun)");
  add_enum_option(
      dp, "--allreduce", o.parallel.allreduce,
      "Gradient all-reduce: our ring, or a vendor baseline: MPI_Allreduce (host) or ncclAllReduce "
      "(--device cuda, one GPU per rank)");
  add_algo_option(
      dp, o.parallel.algo,
      "Which of our all-reduce algorithms each bucket takes (--allreduce ring): ring; rd "
      "(recursive doubling: log2 P steps, fewest sealed messages); rhd (recursive halving-doubling: "
      "2 log2 P steps, the ring's bytes); hier (hierarchical, on --gpus-per-node's nodes: ring "
      "reduce-scatter inside each node, ring all-reduce of each shard between nodes, ring all-gather "
      "inside; the ring itself on one node); auto (per bucket, the cheapest by the cost model for the "
      "TEE mode: --allreduce-cost, else defaults; under --shard priced as reduce-scatter and "
      "all-gather). rd, rhd and hier on several nodes add in another order than the ring: other "
      "parameter bits at P >= 3 (docs/design.md section 5). Every one is split under --shard");
  dp->add_option(
      "--allreduce-cost", o.parallel.cost,
      "Cost model for --allreduce-algo auto: a calibration FILE written by `teetrain bench allreduce "
      "--calibrate FILE` (its model for this --tee mode)");
  dp->add_option("--bucket-mb", o.parallel.bucket_mb,
                 "Gradient bucket cap in MiB (first bucket 1 MiB; 0 = one bucket for the whole model)")
      ->check(non_negative())
      ->capture_default_str();
  add_on_off_option(dp, "--overlap", o.parallel.overlap, "Launch bucket all-reduces while backward runs");
  add_enum_option(
      dp, "--shard", o.parallel.shard,
      "What each rank keeps of the training state: none (DDP: everything); optimizer (ZeRO-1: "
      "AdamW state for its shard only; gradients are reduce-scattered per bucket, parameters "
      "all-gathered after the step); gradients (ZeRO-2: also only its shard of the averaged "
      "gradients: on the CPU each bucket's pages outside it are released after its reduce-scatter, "
      "the summary's grads_resident_peak measures what stays); params (ZeRO-3: also only its shard of the "
      "parameters between their uses, each "
      "transformer block all-gathered before its forward and again before its backward, "
      "released after). Any --allreduce-algo on host gradients (--device cpu: real compute, or "
      "--compute emulate's virtual time); on --device cuda the device ring (--tee off, fast) or "
      "the host ring staged (cc), the gradients staying resident whole (not with --allreduce "
      "nccl|mpi); with real compute the same parameters as none with the same --allreduce-algo, "
      "bit for bit. An emulated GPU refuses a rank that needs more than its memory");
  add_on_off_option(dp, "--prefetch", o.parallel.prefetch,
                    "--shard params: all-gather the next block's parameters while this block computes");
  dp->add_option("--segment-kb", o.parallel.segment_kb,
                 "Ring segment size in KiB (chunks are cut into segments that pipeline); 0 = automatic: "
                 "1 MiB, or under Open MPI's TCP eager limit (read from MPI) when ranks span hosts")
      ->check(non_negative())
      ->capture_default_str();
  dp->add_option("--check-replicas", o.parallel.check_replicas,
                 "Compare a parameter digest across ranks every N steps (0 = off)")
      ->check(non_negative())
      ->capture_default_str();
  dp->add_option("--timeout", o.parallel.timeout_s,
                 "Seconds to wait for a peer before stopping (exit 1) with an error naming it; each start-up "
                 "stage that waits for the other ranks (MPI_Init, the links, attestation, agreement, key "
                 "release) is bounded by it too, plus 2 s, with a line naming the stage")
      ->check(positive())
      ->capture_default_str();
  add_enum_option(dp, "--comm-wait", o.parallel.wait,
                  "How the ring waits for a message: adaptive yields, then naps (leaves cores to backward); "
                  "busy polls like MPI_Allreduce (a core per rank)");
  add_host_transport_option(dp, o.parallel.host_transport);
  add_virtual_rank_options(dp, o.parallel);
  add_enum_option(
      dp, "--grad-memory", o.parallel.grad_memory,
      "Where a CPU run's gradients live: private, ordinary memory on huge pages; shared, a buffer "
      "that the ranks on this host map and add from in place as the ring reduces (with --tee off, "
      "--device cpu and shm between ranks of one host; elsewhere private), which saves the ring "
      "a pass over each bucket but gives up huge pages (--shard gradients and params keep them "
      "private, to release the pages outside the shard)");
}

// Virtual time and its modelled host (docs/design.md §11).
void add_virtual_time_options(CLI::Option_group* em, TrainOptions& o) {
  add_enum_option(em, "--time", o.compute.time,
                  "Emulated runs: virtual (auto's choice) computes every cost on per-rank timelines, so step "
                  "times depend only on the workload and the modelled platform (ring messages are sealed "
                  "tokens; the host's crypto is modelled: --host-*); wall measures the run with the wall "
                  "clock while ops wait (this machine's crypto and scheduling count). Real compute is always "
                  "measured");
  em->add_option(
        "--host-aead-gbps", o.compute.host.aead_gbps,
        "Virtual time: AES-256-GCM rate of one core of the modelled host, GB/s (default 3.36: ISPASS "
        "2025's TDX host, tools/calibration/h100_cc_sources.json)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  em->add_option("--host-crypto-cores", o.compute.host.crypto_cores,
                 "Virtual time: host cores sealing one rank's ring messages at once (0 = the mode's "
                 "--crypto-threads)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  em->add_option(
        "--host-message-us", o.compute.host.message_us,
        "Virtual time: software cost per sealed or opened message on the modelled host, microseconds")
      ->check(non_negative())
      ->capture_default_str();
  em->add_flag("--bounce-reencrypt", o.compute.host.bounce_reencrypt,
               "Virtual time: H100 CC's bounce-buffer bytes are encrypted a second time on the host "
               "(Fastrack's redundant re-encryption): host-sealed messages cost twice the bytes");
}

// --gpus-per-node and the link classes (core/emulated/topology.h).
void add_topology_options(CLI::App* cmd, TrainOptions& o) {
  auto* em = cmd->add_option_group("nodes and links (hier; emulated clusters)");
  em->add_option("--gpus-per-node", o.compute.gpu.topology.gpus_per_node,
                 "Nodes of G consecutive ranks (G must divide the rank count): --allreduce-algo hier runs "
                 "on them; an emulated cluster (--compute emulate) also books --intra-node-link inside a "
                 "node and --inter-node-link between nodes at their published rates and latencies. 0 = "
                 "every rank on one node, every emulated link the GPU's NVLink without latency")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  add_enum_option(em, "--intra-node-link", o.compute.gpu.topology.intra,
                  "With --gpus-per-node: the GPUs' link inside a node. nvlink: the GPU's NVLink (450 GB/s on "
                  "h100), 3.4 us; pcie: Gen5 x16 at 43.5 GB/s measured (64 theoretical), 5.7 us");
  add_enum_option(em, "--inter-node-link", o.compute.gpu.topology.inter,
                  "With --gpus-per-node: the link between nodes, per GPU. ib: InfiniBand NDR 400 Gb/s "
                  "(50 GB/s), 14 us; roce: RoCE 400GbE (50 GB/s), 15.1 us");
}

// --cc-hardware: one sentence per row of the CC hardware table (core/emulated/emulated_gpu.h).
constexpr const char* kCcHardwareHelp =
    "The emulated platform's CC mode in TEE runs (TEE off stays CC off). none: no CC cost on cc's host "
    "path; fast's GPU-sealed ciphertext still crosses H100 CC's bounce buffers (no encrypted GPU-to-GPU "
    "path). h100-pinned|h100-pageable: ISPASS 2025's measured copies through the bounce buffers (the "
    "batch's too) plus CC's fixed cost (unless --cc-transfer-us), +5.05 us per launch. h100-ppcie: "
    "Protected PCIe, a node's GPUs in one CVM: messages inside a node (--gpus-per-node) in clear over "
    "NVLink, between nodes as h100-pinned. blackwell: B200/"
    "B300 (arXiv 2606.23969): host bridge at 0.2x the CC-off rate + 330 us per copy, fast over NVLink "
    "encrypted at 510 GB/s inside a node and through the host bridge between nodes. direct-what-if: no CC "
    "cost, fast over a direct GPU-to-GPU link (no GPU has "
    "one). tee-io-what-if: TDX Connect/TEE-IO (not shipped): no bounce buffers, messages inside a node "
    "encrypted by the link, not sealed";

void add_emulation_options(CLI::App* cmd, TrainOptions& o) {
  auto* em = cmd->add_option_group("emulation and tracing (overhead studies)");
  add_enum_option(
      em, "--compute", o.compute.mode,
      "real: run forward/backward; emulate: run the model on an emulated --gpu whose every op costs a "
      "time computed from its shape; buckets, the ring's messages and their sealing stay real (see --time)");
  add_virtual_time_options(em, o);
  std::string gpus;  // the emulated GPUs' one table (core/emulated/emulated_gpu.h)
  for (const GpuSpec& g : gpu_specs()) gpus += g.name + std::string(", ");
  em->add_option(
        "--gpu", o.compute.gpu.name,
        "GPU whose compute is emulated: " + gpus +
            "or a platform profile FILE.json (`teetrain bench host-profile` measures this machine's)")
      ->check(CLI::Validator(
          [](std::string& s) -> std::string {
            try {
              resolve_gpu_spec(s);
            } catch (const InputError& e) {
              return e.what();
            }
            return {};
          },
          "GPU"))
      ->capture_default_str();
  add_enum_option(em, "--gpu-precision", o.compute.gpu.precision,
                  "Precision whose peak is used (tf32: what teetrain's CUDA backend runs with --tf32, the "
                  "default; bf16 also halves the element-wise bytes)");
  em->add_option("--gpu-tflops", o.compute.gpu.tflops, "Override the GPU's peak TFLOP/s (0 = table)")
      ->check(non_negative())
      ->capture_default_str();
  em->add_option("--gpu-efficiency", o.compute.gpu.efficiency,
                 "Override the projection GEMMs' achieved fraction of peak (0 = table: 0.717, measured; "
                 "attention's batched GEMMs keep theirs)")
      ->check(non_negative())
      ->capture_default_str();
  em->add_option(
        "--gpu-act-traffic", o.compute.gpu.act_traffic,
        "Override the HBM traffic of element-wise ops per byte they read and write, paced at 80% of "
        "the GPU's memory bandwidth (default: table, measured for teetrain's CUDA kernels: 1.19, the "
        "transformer's row kernels 0.498, attention's scores 1.87; 0 = no element-wise cost)")
      ->check(non_negative());
  add_gpu_baseline_options(em, o.compute.gpu.baseline, o.compute.gpu.fused_efficiency);
  em->add_option("--gpu-aead-gbps", o.compute.gpu.aead_gbps,
                 "Override the emulated GPU's AES-GCM GB/s used by --tee-device-crypto (0 = table, measured "
                 "with bench_gpu_aead)")
      ->check(non_negative())
      ->capture_default_str();
  em->add_option("--link-gbps", o.parallel.link_gbps,
                 "Throttle each ring link to this many GB/s (1e9 B/s; 0 = none): NVLink, PCIe, network")
      ->check(non_negative())
      ->capture_default_str();
  add_enum_option(
      em, "--link", o.parallel.link,
      "real: ring messages move through host memory (throttled by --link-gbps). emulate (needs "
      "--compute emulate): plaintext ring messages of the emulated GPUs carry no payload and cost a "
      "wait at --link-gbps (default: the GPU's NVLink, 450 GB/s for h100), and the ring's adds are "
      "waits at the GPU's memory bandwidth; CPU-sealed messages (cc) still move for real. In virtual time "
      "(--time, emulated runs) every ring link is modelled whatever this says");
  em->add_option(
        "--cc-transfer-us", o.parallel.cc_transfer_us,
        "Fixed cost in microseconds of one H100 CC bounce-buffer crossing of an emulated GPU's gradient "
        "message (needs --compute emulate): charged before each host seal (device -> host) and after each "
        "host open (host -> device) of a ring message, one crossing at a time per rank. Only rings the CPU "
        "seals pay it (cc, or fast with --tee-device-crypto off). 0 = none: teetrain's own cost only")
      ->check(non_negative())
      ->capture_default_str();
  add_enum_option(em, "--cc-hardware", o.compute.gpu.cc, kCcHardwareHelp);
  em->add_option("--timing-warmup", o.schedule.timing_warmup,
                 "Leave the first N steps (allocations, first touch of buffers) out of the step time and the "
                 "phase times; counters still count every step")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  em->add_option("--trace", o.output.trace,
                 "Write a Chrome/Perfetto trace (one process per rank; compute, comm, crypto lanes)");
}

}  // namespace

void add_gpu_baseline_options(CLI::App* cmd, GpuBaseline& baseline, double& fused_efficiency) {
  add_enum_option(
      cmd, "--gpu-baseline", baseline,
      "Which TEE-off step the emulated GPU models: teetrain (its own CUDA kernels, attention materialised; "
      "within 4-13% of PyTorch's eager step where measured) or fused-attention (the PyTorch-class step of "
      "the published studies: attention one fused kernel as PyTorch's scaled_dot_product_attention runs it, "
      "fitted to PyTorch 2.11's fused GPT-2 steps on an H200; the banner names it)");
  cmd->add_option("--gpu-fused-efficiency", fused_efficiency,
                  "Override the fused attention kernel's fraction of the FP32 peak (BF16: of the BF16 peak) "
                  "under --gpu-baseline fused-attention (0 = table, fitted)")
      ->check(non_negative())
      ->capture_default_str();
}

void add_train_options(CLI::App* cmd, TrainOptions& o) {
  add_model_options(cmd, o.model);
  add_data_options(cmd, o);
  add_optimizer_options(cmd, o);
  add_reporting_options(cmd, o);
  add_parallel_options(cmd, o);
  add_tee_options(cmd, o.tee);
  add_emulation_options(cmd, o);
  add_topology_options(cmd, o);
}

std::chrono::milliseconds timeout_before_parse(int argc, char** argv) {
  double seconds = ParallelOptions{}.timeout_s;
  constexpr std::string_view flag = "--timeout";
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    std::string_view value;
    if (a == flag && i + 1 < argc) {
      value = argv[++i];
    } else if (a.starts_with(flag) && a.size() > flag.size() && a[flag.size()] == '=') {
      value = a.substr(flag.size() + 1);
    } else {
      continue;
    }
    char* end = nullptr;
    const std::string text(value);
    const double v = std::strtod(text.c_str(), &end);
    seconds = end != nullptr && *end == '\0' && v > 0 ? v : ParallelOptions{}.timeout_s;
  }
  constexpr double kLongest = 1e9;  // ~32 years: the deadline stays a representable time
  return std::chrono::milliseconds(static_cast<long>(std::min(seconds, kLongest) * 1000.0));
}

}  // namespace tt::cli
