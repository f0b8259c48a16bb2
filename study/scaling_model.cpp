#include "study/scaling_model.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>

#include "base/error.h"
#include "base/untrusted_json.h"
#include "engine/file_util.h"
#include "models/model_registry.h"

namespace tt::study {

RingTraffic ring_traffic(int P, const std::vector<double>& bucket_bytes, double segment_bytes, bool tee_on,
                         bool forward_ag) {
  RingTraffic t;
  if (P <= 1) return t;
  const double p = P;
  const double hops = 2.0 * (p - 1.0);  // P-1 scatter-reduce + P-1 all-gather sends
  // Forward-ciphertext all-gather: each rank seals its P-1 scatter-reduce hops and its own finished
  // chunk once; per-hop re-seals at every all-gather hop too.
  const double sealed_chunks = forward_ag ? p : hops;
  for (const double bucket : bucket_bytes) {
    if (bucket <= 0) continue;
    const double chunk = bucket / p;
    const double segs = segment_bytes > 0 ? std::max(1.0, std::ceil(chunk / segment_bytes)) : 1.0;
    t.messages += hops * segs;
    t.wire_bytes += hops * chunk;
    if (!tee_on) continue;
    t.seals += sealed_chunks * segs;
    t.seal_bytes += sealed_chunks * chunk;
    t.open_bytes += hops * chunk;
  }
  return t;
}

RingTraffic ring_traffic(int P, double model_bytes, int buckets, double segment_bytes, bool tee_on,
                         bool forward_ag) {
  if (buckets <= 0 || model_bytes <= 0) return {};
  return ring_traffic(P, std::vector<double>(static_cast<std::size_t>(buckets), model_bytes / buckets),
                      segment_bytes, tee_on, forward_ag);
}

int bucket_count(double model_bytes, double bucket_mb) {
  constexpr double kMiB = 1024.0 * 1024.0;
  if (bucket_mb <= 0 || model_bytes <= 0) return 1;
  const double first = std::min(kMiB, bucket_mb * kMiB);
  if (model_bytes <= first) return 1;
  return 1 + static_cast<int>(std::ceil((model_bytes - first) / (bucket_mb * kMiB)));
}

namespace {

// Note [Stage pricing]: a preset's units, from its configuration (no model is built).
void set_unit_shares(RunPoint& r) {
  const std::vector<PresetRow> presets = list_presets();
  if (std::none_of(presets.begin(), presets.end(), [&r](const PresetRow& p) { return p.name == r.model; }))
    return;
  ModelOptions opts;
  opts.name = r.model;
  const ModelMemory m = model_memory(opts, 0, 0);
  if (m.params == 0 || m.units == 0) return;
  const double params = static_cast<double>(m.params);
  r.unit_share = std::min(1.0, static_cast<double>(m.units * m.unit_params) / params);
  r.last_unit_share = static_cast<double>(m.unit_params) / params;
}

const nlohmann::json& field(const nlohmann::json& j, const char* key) {
  if (!j.contains(key))
    throw InputError(std::string("run summary has no '") + key + "' field (not a --summary file?)");
  return j.at(key);
}

double phase_mean(const nlohmann::json& phases, const char* name) {
  return phases.contains(name) ? phases.at(name).value("mean", 0.0) : 0.0;
}

std::string variant_of(const nlohmann::json& s) {
  if (s.contains("variant")) return s["variant"].get<std::string>();
  const nlohmann::json& tee = field(s, "tee");
  const std::string mode = tee.value("mode", "off");
  if (mode == "off") return mode;
  const bool fast = mode == "fast";
  const bool pipe = tee.value("pipeline", fast);
  const bool fwd = tee.value("forward_ag", fast);
  const int thr = tee.value("crypto_threads", fast ? 2 : 1);
  if (pipe == fast && fwd == fast && thr == (fast ? 2 : 1)) return mode;
  return mode + "[pipe=" + (pipe ? "on" : "off") + ",fwd=" + (fwd ? "on" : "off") +
         ",thr=" + std::to_string(thr) + "]";
}

// Solves the k x k system M x = b by Gaussian elimination with partial pivoting (k <= 3).
std::vector<double> solve(std::vector<std::vector<double>> M, std::vector<double> b) {
  const std::size_t k = b.size();
  double diag = 0;
  for (std::size_t c = 0; c < k; ++c) diag = std::max(diag, std::abs(M[c][c]));
  const double tiny = diag * 1e-10;  // relative: collinear columns end up here after elimination
  for (std::size_t c = 0; c < k; ++c) {
    std::size_t piv = c;
    for (std::size_t r = c + 1; r < k; ++r) {
      if (std::abs(M[r][c]) > std::abs(M[piv][c])) piv = r;
    }
    std::swap(M[c], M[piv]);
    std::swap(b[c], b[piv]);
    if (std::abs(M[c][c]) <= tiny) continue;  // collinear column: leave its coefficient at 0
    for (std::size_t r = c + 1; r < k; ++r) {
      const double f = M[r][c] / M[c][c];
      for (std::size_t j = c; j < k; ++j) M[r][j] -= f * M[c][j];
      b[r] -= f * b[c];
    }
  }
  std::vector<double> x(k, 0.0);
  for (std::size_t c = k; c-- > 0;) {
    if (std::abs(M[c][c]) <= tiny) continue;
    double s = b[c];
    for (std::size_t j = c + 1; j < k; ++j) s -= M[c][j] * x[j];
    x[c] = s / M[c][c];
  }
  return x;
}

std::array<double, 3> features(const RunPoint& r) {
  const RingTraffic t = traffic_of(r);
  const double k = r.oversubscription;
  return {t.messages * k, t.wire_bytes * k, (t.seal_bytes + t.open_bytes) * k};
}

// The ring's segments as the run cut them (its summary's segment_bytes). Summaries without that field
// were written when config's segment_kb was always a size; 0 (automatic) is read as 1 MiB, what it cuts
// within a host.
// A virtual-time run's known software cost per sealed or opened message (config gpu.time), spread over
// its crypto cores as platform/emulated/virtual_seal_channel.cpp spreads it; 0 otherwise.
double known_message_seconds(const nlohmann::json& config, bool tee_on) {
  if (!tee_on || !config.contains("gpu") || !config["gpu"].is_object()) return 0.0;
  const auto time = config["gpu"].find("time");
  if (time == config["gpu"].end() || !time->is_object()) return 0.0;
  const double cores = std::max(1.0, time->value("host_crypto_cores", 1.0));
  return time->value("host_message_us", 0.0) * 1e-6 / cores;
}

double segment_bytes_of(const nlohmann::json& s, const nlohmann::json& config) {
  if (const auto cut = s.find("segment_bytes"); cut != s.end() && cut->is_number()) return cut->get<double>();
  const double segment_kb = config.value("segment_kb", 0.0);
  return segment_kb > 0 ? segment_kb * 1024.0 : 1048576.0;
}

}  // namespace

RunPoint run_point(const nlohmann::json& s) {
  RunPoint r;
  const nlohmann::json& config = field(s, "config");
  r.model = config.contains("model") ? config["model"].value("name", "?") : s.value("model", "?");
  r.variant = variant_of(s);
  r.P = field(s, "world_size").get<int>();
  r.bucket_mb = s.value("bucket_mb", 0.0);
  r.buckets = s.value("buckets", 1);
  if (const auto plan = s.find("bucket_bytes"); plan != s.end() && plan->is_array()) {
    for (const auto& b : *plan) r.bucket_bytes.push_back(b.get<double>());
  }
  r.model_bytes = static_cast<double>(field(s, "num_params").get<double>()) * 4.0;
  const nlohmann::json& tee = field(s, "tee");
  r.tee_on = tee.value("mode", "off") != "off";
  r.forward_ag = tee.value("forward_ag", false);
  const bool pipeline = tee.value("pipeline", false);
  r.segment_bytes = (r.tee_on && !pipeline) ? 0.0 : segment_bytes_of(s, config);
  r.overlap = s.value("overlap", "on") == "on";
  r.step_s = field(s, "step_s_mean").get<double>();
  const nlohmann::json& ph = field(s, "phases");
  r.backward_s = phase_mean(ph, "backward");
  r.optimizer_s = phase_mean(ph, "optimizer");
  set_unit_shares(r);
  r.compute_s = phase_mean(ph, "data") + phase_mean(ph, "ingress") + phase_mean(ph, "forward") +
                r.backward_s + r.optimizer_s;
  // A run in virtual time computed every rank's costs on resources of its own (docs/design.md §11):
  // however many ranks shared this machine's cores, nothing was oversubscribed.
  const bool virtual_time = s.value("time", "wall") == "virtual";
  r.virtual_time = virtual_time;
  if (!virtual_time && s.contains("host_cores") && s.contains("ranks_per_host") &&
      s["host_cores"].get<double>() > 0) {
    r.oversubscription = std::max(1.0, s["ranks_per_host"].get<double>() / s["host_cores"].get<double>());
  }
  r.seal_s = phase_mean(ph, "seal");
  r.open_s = phase_mean(ph, "open");
  r.host_links = config.value("link", "real") != "emulate";
  r.transfer_s = s.value("cc_transfer_us", 0.0) * 1e-6;  // as applied: 0 unless the host sealed the ring
  r.message_s = known_message_seconds(config, r.tee_on);
  return r;
}

std::vector<double> bucket_plan(const RunPoint& r) {
  if (!r.bucket_bytes.empty()) return r.bucket_bytes;
  if (r.buckets <= 0 || r.model_bytes <= 0) return {};
  return std::vector<double>(static_cast<std::size_t>(r.buckets), r.model_bytes / r.buckets);
}

RunPoint last_bucket(const RunPoint& r) {
  RunPoint last = r;
  const std::vector<double> plan = bucket_plan(r);
  last.bucket_bytes = plan.empty() ? std::vector<double>{} : std::vector<double>{plan.back()};
  last.buckets = 1;
  return last;
}

RingTraffic traffic_of(const RunPoint& r) {
  return ring_traffic(r.P, bucket_plan(r), r.segment_bytes, r.tee_on, r.forward_ag);
}

double transfer_seconds(const RunPoint& r) {
  const double per_crossing = r.transfer_s + r.message_s;
  if (per_crossing <= 0) return 0.0;
  const RingTraffic t = traffic_of(r);
  return per_crossing * (t.seals + t.messages);  // a crossing per seal, and per received (opened) message
}

namespace {

double ring_seconds(const Costs& c, const RunPoint& r) {
  const auto f = features(r);
  return c.alpha * f[0] + c.beta * f[1] + c.gamma * f[2] + transfer_seconds(r);
}

// Which side of predict_step's max() (or no overlap) a run is on: within one side the exposed time is
// linear in the costs.
enum class Branch { Whole, LastBucket, PastBackward };

Branch branch_of(const Costs& c, const RunPoint& r) {
  if (!r.overlap) return Branch::Whole;
  const double ring = ring_seconds(c, r);
  return ring_seconds(c, last_bucket(r)) >= ring - r.backward_s ? Branch::LastBucket : Branch::PastBackward;
}

// One run as a linear row: exposed target y = x . g, columns (messages, wire bytes, crypto bytes, 1).
struct Row {
  std::array<double, 4> g{};
  double y = 0;
};

Row row_of(const RunPoint& r, Branch br) {
  // The last bucket alone when only it stays exposed (Note [Real bucket plan]).
  const RunPoint exposed = br == Branch::LastBucket ? last_bucket(r) : r;
  const auto f = features(exposed);
  Row row;
  for (std::size_t j = 0; j < 3; ++j) row.g[j] = f[j];
  row.g[3] = r.P > 1 ? 1.0 : 0.0;  // the tail: exposed whatever the overlap (no ring at P = 1)
  row.y =
      r.step_s - r.compute_s + (br == Branch::PastBackward ? r.backward_s : 0.0) - transfer_seconds(exposed);
  return row;
}

// Active-set NNLS over the columns with fixed[j] < 0 (fixed[j] >= 0: known coefficient), each at least
// lower[j] (fitted as lower[j] + a non-negative excess), rows weighted by 1 / step time: residuals
// relative to the step, since runs span 20 ms to 10 s and the model is judged by its relative error
// (unweighted, the slowest runs alone would set the costs).
std::array<double, 4> nnls(const std::vector<RunPoint>& runs, const std::vector<Row>& rows,
                           const std::array<double, 4>& fixed, const std::array<double, 4>& lower) {
  // Columns are scaled to a maximum of 1 so messages (~1e3) and bytes (~1e9) condition alike.
  std::array<double, 4> scale{};
  for (const auto& row : rows) {
    for (std::size_t j = 0; j < 4; ++j) scale[j] = std::max(scale[j], row.g[j]);
  }
  std::vector<std::size_t> active;
  for (std::size_t j = 0; j < 4; ++j) {
    if (scale[j] > 0 && fixed[j] < 0) active.push_back(j);
  }
  std::array<double, 4> coef{};
  for (std::size_t j = 0; j < 4; ++j) coef[j] = fixed[j] >= 0 ? fixed[j] : lower[j];
  while (!active.empty()) {
    const std::size_t k = active.size();
    std::vector<std::vector<double>> M(k, std::vector<double>(k, 0.0));
    std::vector<double> b(k, 0.0);
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const Row& row = rows[i];
      double y = row.y;
      for (std::size_t j = 0; j < 4; ++j) y -= coef[j] * row.g[j];  // the known part: fixed, or the floor
      const double w2 = runs[i].step_s > 0 ? 1.0 / (runs[i].step_s * runs[i].step_s) : 1.0;
      for (std::size_t a = 0; a < k; ++a) {
        const double fa = row.g[active[a]] / scale[active[a]];
        b[a] += w2 * fa * y;
        for (std::size_t bb = 0; bb < k; ++bb) M[a][bb] += w2 * fa * row.g[active[bb]] / scale[active[bb]];
      }
    }
    const auto x = solve(M, b);
    std::size_t worst = k;
    for (std::size_t a = 0; a < k; ++a) {
      if (x[a] < 0 && (worst == k || x[a] < x[worst])) worst = a;
    }
    if (worst == k) {
      for (std::size_t a = 0; a < k; ++a) coef[active[a]] += x[a] / scale[active[a]];
      break;
    }
    active.erase(active.begin() + static_cast<std::ptrdiff_t>(worst));
  }
  return coef;
}

}  // namespace

Costs fit_costs(const std::vector<RunPoint>& runs, double fixed_beta, const Costs* floor) {
  Costs c;
  c.points = static_cast<int>(runs.size());
  if (runs.empty()) return c;
  // A virtual-time run has no unknown per-message cost (scaling_model.h): alpha stays 0 for such runs.
  const bool all_virtual =
      std::all_of(runs.begin(), runs.end(), [](const RunPoint& r) { return r.virtual_time; });
  const std::array<double, 4> fixed{all_virtual ? 0.0 : -1.0, fixed_beta >= 0 ? fixed_beta : -1.0, -1.0,
                                    -1.0};
  const std::array<double, 4> lower{floor != nullptr ? floor->alpha : 0.0, 0.0, 0.0,
                                    floor != nullptr ? floor->tail : 0.0};
  // predict_step's max() makes the exposed time piecewise linear in the costs: start with every run's
  // ring fully exposed, then alternate "which side of the max is each run on" and a linear fit of that
  // side, until the sides stop changing.
  std::vector<Branch> branches(runs.size(), Branch::Whole);
  for (int iter = 0; iter < 12; ++iter) {
    std::vector<Row> rows;
    for (std::size_t i = 0; i < runs.size(); ++i) rows.push_back(row_of(runs[i], branches[i]));
    const auto x = nnls(runs, rows, fixed, lower);
    c.alpha = x[0];
    c.beta = x[1];
    c.gamma = x[2];
    c.tail = x[3];
    bool changed = false;
    for (std::size_t i = 0; i < runs.size(); ++i) {
      const Branch br = branch_of(c, runs[i]);
      changed = changed || br != branches[i];
      branches[i] = br;
    }
    if (!changed) break;
  }
  return c;
}

double predict_step(const Costs& c, const RunPoint& r) {
  const double ring = ring_seconds(c, r);
  const double exposed = r.overlap ? std::max(ring_seconds(c, last_bucket(r)), ring - r.backward_s) : ring;
  return r.compute_s + (r.P > 1 ? c.tail : 0.0) + std::max(0.0, exposed);
}

// Note [Stage pricing] (scaling_model.h).
namespace {
struct RingHalves {
  double scatter = 0;  // the reduce-scatter: the first P - 1 hops, each sealed
  double gather = 0;   // the all-gather: the rest of the ring (forwarded ciphertext where the run does)
};
RingHalves ring_halves(const Costs& c, const RunPoint& r) {
  RunPoint every_hop_sealed = r;
  every_hop_sealed.forward_ag = false;
  const double scatter = ring_seconds(c, every_hop_sealed) / 2;
  return {.scatter = scatter, .gather = ring_seconds(c, r) - scatter};
}
}  // namespace

double predict_stage_step(const Costs& c, const RunPoint& r, ShardPrice stage) {
  if (stage == ShardPrice::Ddp || r.P <= 1) return predict_step(c, r);
  const RingHalves all = ring_halves(c, r);
  const RingHalves last = ring_halves(c, last_bucket(r));
  const double base = r.compute_s - r.optimizer_s * (1.0 - 1.0 / r.P) + c.tail;
  if (stage == ShardPrice::Zero12) {
    const double scatter = r.overlap ? std::max(last.scatter, all.scatter - r.backward_s) : all.scatter;
    return base + std::max(0.0, scatter) + all.gather;
  }
  const double forward_s = std::max(0.0, r.compute_s - r.backward_s - r.optimizer_s);
  const double units_gather = all.gather * r.unit_share;
  const double forward_gather = r.overlap ? std::max(0.0, units_gather - forward_s) : units_gather;
  const double backward_ring = all.gather * (r.unit_share - r.last_unit_share) + all.scatter;
  const double backward_comm =
      r.overlap ? std::max(last.scatter, backward_ring - r.backward_s) : backward_ring;
  const double after_update = all.gather * (1.0 - r.unit_share);
  return base + forward_gather + std::max(0.0, backward_comm) + after_update;
}

std::vector<nlohmann::json> load_runs(const std::string& path) {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    if (fs::exists(fs::path(path) / "runs.jsonl", ec)) {
      files.push_back(fs::path(path) / "runs.jsonl");
    } else {
      for (const auto& e : fs::directory_iterator(path, ec)) {
        if (e.path().extension() == ".json") files.push_back(e.path());
      }
      std::sort(files.begin(), files.end());
    }
  } else {
    files.push_back(path);
  }
  std::vector<nlohmann::json> out;
  const auto parse = [](const std::string& text, const fs::path& f) {
    nlohmann::json j = parse_untrusted_json(text);
    if (j.is_discarded()) throw InputError("--runs " + f.string() + ": not a JSON run summary");
    return j;
  };
  for (const auto& f : files) {
    const std::vector<std::byte> bytes = read_file_bytes(f);  // a FIFO is refused, not waited on
    std::istringstream in(std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
    if (f.extension() == ".jsonl") {
      std::string line;
      while (std::getline(in, line)) {
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        out.push_back(parse(line, f));
      }
    } else {
      out.push_back(parse(in.str(), f));
    }
  }
  if (out.empty())
    throw InputError("--runs " + path + ": no run summaries found (expected runs.jsonl or *.json)");
  return out;
}

namespace {
// Multi-rank runs carry the ring's costs; P = 1 runs only pin down compute.
std::vector<RunPoint> multi_rank(const std::vector<RunPoint>& runs) {
  std::vector<RunPoint> multi;
  std::copy_if(runs.begin(), runs.end(), std::back_inserter(multi),
               [](const RunPoint& r) { return r.P > 1; });
  return multi;
}
// Fits every variant's costs. The TEE-off runs (per kind of link) are fitted first; a TEE variant then
// keeps their link cost (the link is the same whatever is sealed) and fits at least their per-message
// and tail costs (a sealed ring does all the plaintext ring does, and more), so no projection can put
// a TEE variant below `off` — fitted freely, a variant's per-message cost could come out lower than
// off's and win at large P, where messages dominate.
nlohmann::json fit_variants(const std::map<std::string, std::vector<RunPoint>>& by_variant,
                            std::map<std::string, Costs>& costs) {
  nlohmann::json out = nlohmann::json::object();
  std::map<bool, Costs> plain;  // per kind of link
  for (const auto& [v, rs] : by_variant) {
    if (rs.front().tee_on) continue;
    const std::vector<RunPoint> multi = multi_rank(rs);
    if (!multi.empty()) plain[rs.front().host_links] = fit_costs(multi);
  }
  for (const auto& [v, rs] : by_variant) {
    const std::vector<RunPoint> multi = multi_rank(rs);
    const auto off = plain.find(rs.front().host_links);
    const bool floored = rs.front().tee_on && off != plain.end();
    costs[v] = floored ? fit_costs(multi, off->second.beta, &off->second) : fit_costs(multi);
    const Costs& c = costs[v];
    double seal_b = 0, seal_s = 0, open_b = 0, open_s = 0, transfer_s = 0;
    for (const auto& r : multi) {
      transfer_s = std::max(transfer_s, r.transfer_s);
      const RingTraffic t = traffic_of(r);
      seal_b += t.seal_bytes, seal_s += r.seal_s, open_b += t.open_bytes, open_s += r.open_s;
    }
    out[v] = {{"alpha_us", c.alpha * 1e6},
              {"tail_ms", c.tail * 1e3},
              {"link_gbs", c.beta > 0 ? 1e-9 / c.beta : 0.0},
              {"crypto_gbs", c.gamma > 0 ? 1e-9 / c.gamma : 0.0},
              {"seal_gbs_measured", seal_s > 0 ? seal_b / seal_s / 1e9 : 0.0},
              {"open_gbs_measured", open_s > 0 ? open_b / open_s / 1e9 : 0.0},
              {"transfer_us", transfer_s * 1e6},
              {"points", c.points},
              {"tee_on", rs.front().tee_on}};
  }
  return out;
}

// The run a projection starts from: the chosen model (default: the largest measured), its P = 1 run
// when there is one (no core sharing), otherwise its fastest compute.
const RunPoint& projection_base(const std::vector<RunPoint>& runs, const ModelQuery& q) {
  std::string model = q.model;
  double best_bytes = -1;
  for (const auto& r : runs) {
    if (model.empty() && r.model_bytes > best_bytes) best_bytes = r.model_bytes;
  }
  if (model.empty()) {
    for (const auto& r : runs) {
      if (r.model_bytes == best_bytes) model = r.model;
    }
  }
  const RunPoint* base = nullptr;
  for (const auto& r : runs) {
    if (r.model != model) continue;
    if (base == nullptr || (r.P == 1 && base->P != 1) || (r.P == base->P && r.compute_s < base->compute_s))
      base = &r;
  }
  if (base == nullptr) throw InputError("--model " + model + ": no measured run of it in " + q.runs);
  return *base;
}

// The projected model's bucket plan at the projection's bucket size: that of a measured run of the
// model at that size (Note [Real bucket plan]); empty (equal slices) when no run has one.
std::vector<double> projected_plan(const std::vector<RunPoint>& runs, const RunPoint& base,
                                   double bucket_mb) {
  for (const auto& r : runs) {
    if (r.model == base.model && r.bucket_mb == bucket_mb && !r.bucket_bytes.empty()) return r.bucket_bytes;
  }
  return {};
}

nlohmann::json project(const RunPoint& base, const ModelQuery& q, const std::vector<RunPoint>& runs,
                       const std::map<std::string, std::vector<RunPoint>>& by_variant,
                       std::map<std::string, Costs>& costs) {
  const std::vector<double> plan = projected_plan(runs, base, q.bucket_mb);
  // By default every variant over the base's kind of link whose costs the runs identify: one or two
  // multi-rank runs fit the four costs exactly whatever they are (an ablation's single run puts its whole
  // step into the per-message cost), so such a variant is listed as not projected instead of
  // extrapolated. Variants named with --tee are projected regardless.
  constexpr int kMinRunsToProject = 3;
  std::vector<std::string> variants = q.variants;
  nlohmann::json unidentified = nlohmann::json::array();
  if (variants.empty()) {
    for (const auto& [v, rs] : by_variant) {
      if (rs.front().host_links != base.host_links) continue;  // the base's kind of link only
      if (costs[v].points < kMinRunsToProject) {
        unidentified.push_back(v);
      } else {
        variants.push_back(v);
      }
    }
  }
  nlohmann::json rows = nlohmann::json::array();
  nlohmann::json stage_rows = nlohmann::json::array();  // Note [Stage pricing]: per P and variant
  for (int P : q.ranks) {
    nlohmann::json row = {{"P", P}};
    for (const auto& v : variants) {
      auto it = by_variant.find(v);
      if (it == by_variant.end()) throw InputError("--tee " + v + ": no measured runs of this variant");
      RunPoint r = base;
      const RunPoint& like = it->second.front();  // the variant's switches and segment size
      r.variant = v;
      r.P = P;
      r.bucket_mb = q.bucket_mb;
      r.bucket_bytes = plan;
      r.buckets = plan.empty() ? bucket_count(r.model_bytes, q.bucket_mb) : static_cast<int>(plan.size());
      r.overlap = q.overlap;
      r.tee_on = like.tee_on;
      r.forward_ag = like.forward_ag;
      r.segment_bytes = like.segment_bytes;
      r.transfer_s = like.transfer_s;
      row[v] = predict_step(costs[v], r);
      nlohmann::json stage_row = {{"P", P}, {"variant", v}};
      for (const ShardPriceName& s : kShardPrices)
        stage_row[s.name] = predict_stage_step(costs[v], r, s.stage);
      stage_rows.push_back(stage_row);
    }
    rows.push_back(row);
  }
  return {{"model", base.model},
          {"bucket_mb", q.bucket_mb},
          {"overlap", q.overlap},
          {"compute_s", base.compute_s},
          {"compute_P", base.P},
          {"variants", variants},
          {"rows", rows},
          {"stages", stage_rows},
          {"not_projected", unidentified},
          {"bucket_plan", plan.empty() ? "equal slices (no run of this model at this bucket size)"
                                       : "the runs' bucket plan"},
          {"buckets",
           plan.empty() ? bucket_count(base.model_bytes, q.bucket_mb) : static_cast<int>(plan.size())}};
}

}  // namespace

namespace {
// Mean and max |relative error| of a set of runs.
struct ErrorStats {
  double sum = 0, max = 0;
  int n = 0;
  void add(double err) { sum += std::abs(err), max = std::max(max, std::abs(err)), ++n; }
  void merge(const ErrorStats& o) { sum += o.sum, max = std::max(max, o.max), n += o.n; }
  double mean() const { return n > 0 ? sum / n : 0.0; }
  nlohmann::json json() const { return {{"runs", n}, {"mean_abs", mean()}, {"max_abs", max}}; }
};
// Every fitted run, for the projection's base.
std::vector<RunPoint> multi_fit(const std::map<std::string, std::vector<RunPoint>>& by_variant) {
  std::vector<RunPoint> all;
  for (const auto& [v, rs] : by_variant) all.insert(all.end(), rs.begin(), rs.end());
  return all;
}
}  // namespace

nlohmann::json run_scaling_model(const ModelQuery& q) {
  std::vector<RunPoint> runs;
  for (const auto& s : load_runs(q.runs)) {
    if (s.value("world_size", 1) >= 1 && s.contains("phases")) runs.push_back(run_point(s));
  }
  // Runs whose plaintext crossed this host's memory and runs over emulated links have different link
  // costs: when both are present, the host-link runs are calibrated as variants of their own.
  const bool mixed = std::any_of(runs.begin(), runs.end(), [](const RunPoint& r) { return r.host_links; }) &&
                     std::any_of(runs.begin(), runs.end(), [](const RunPoint& r) { return !r.host_links; });
  if (mixed) {
    for (auto& r : runs) {
      if (r.host_links) r.variant += " (host links)";
    }
  }
  // Only the fit set calibrates; held-out runs (P > fit_max_p) are predicted, never fitted.
  const auto held_out = [&q](const RunPoint& r) { return q.fit_max_p > 0 && r.P > q.fit_max_p; };
  std::map<std::string, std::vector<RunPoint>> by_variant;
  for (const auto& r : runs) {
    if (!held_out(r)) by_variant[r.variant].push_back(r);
  }

  std::map<std::string, Costs> costs;
  nlohmann::json report = {{"costs", fit_variants(by_variant, costs)}, {"points", nlohmann::json::array()}};
  std::array<ErrorStats, 2> stats{};  // [0]: fit set, [1]: held out
  for (const auto& r : runs) {
    const double pred = predict_step(costs[r.variant], r);
    const double err = r.step_s > 0 ? (pred - r.step_s) / r.step_s : 0.0;
    stats[held_out(r) ? 1 : 0].add(err);
    report["points"].push_back({{"model", r.model},
                                {"variant", r.variant},
                                {"P", r.P},
                                {"bucket_mb", r.bucket_mb},
                                {"overlap", r.overlap},
                                {"measured_s", r.step_s},
                                {"predicted_s", pred},
                                {"error", err},
                                {"held_out", held_out(r)}});
  }
  ErrorStats all = stats[0];
  all.merge(stats[1]);
  report["mean_abs_error"] = all.mean();
  report["fit_max_p"] = q.fit_max_p;
  report["fit_error"] = stats[0].json();
  report["held_out_error"] = stats[1].json();
  const std::vector<RunPoint> fitted = by_variant.empty() ? runs : multi_fit(by_variant);
  report["projection"] = project(projection_base(fitted, q), q, runs, by_variant, costs);
  return report;
}

}  // namespace tt::study
