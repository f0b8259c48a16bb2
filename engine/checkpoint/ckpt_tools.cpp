#include "engine/checkpoint/ckpt_tools.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "base/error.h"
#include "base/printable.h"
#include "engine/checkpoint/checkpoint.h"
#include "engine/checkpoint/freshness.h"
#include "engine/checkpoint/safetensors.h"
#include "engine/file_util.h"
#include "tee/bytes.h"
#include "tee/crypto/sealed_file.h"
#include "tee/digest.h"
#include "tee/errors.h"
#include "tee/regular_file.h"

namespace tt {
namespace fs = std::filesystem;

namespace {

constexpr const char* kMarker = kCheckpointMarker;
constexpr const char* kSealedSuffix = ".sealed";

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool is_sealed(const fs::path& p) {
  const tee::RegularFile f = tee::open_regular_file(p, "checkpoint file");
  std::array<std::uint8_t, 8> magic{};
  return tee::pread_full(f.fd.get(), magic, 0) == 8 &&
         std::string_view(reinterpret_cast<const char*>(magic.data()), magic.size()) == "TTSEAL01";
}

// The file's name without ".sealed": what its plaintext is.
std::string plain_name(const fs::path& p) {
  std::string n = p.filename().string();
  if (ends_with(n, kSealedSuffix)) n.resize(n.size() - std::string_view(kSealedSuffix).size());
  return n;
}

bool is_step_dir(const fs::path& p) {
  std::error_code ec;
  for (const char* f : {kMarker, kModelFile, kManifestFile})
    if (fs::exists(p / f, ec) || fs::exists(p / (std::string(f) + kSealedSuffix), ec)) return true;
  return false;
}

// Step directories of `path`: itself if it is one, else its step_* subdirectories (sorted).
std::vector<fs::path> step_dirs(const fs::path& path, bool complete_only) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) throw InputError("checkpoint '" + path.string() + "': no such directory");
  if (is_step_dir(path)) return {path};
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(path, ec)) {
    const std::string n = e.path().filename().string();
    if (!e.is_directory() || n.rfind("step_", 0) != 0) continue;
    if (complete_only && !fs::exists(e.path() / kMarker, ec)) continue;
    out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  if (out.empty()) {
    throw InputError("checkpoint '" + path.string() + "': no " + (complete_only ? "complete " : "") +
                     "step directories (step_*/) inside");
  }
  return out;
}

std::vector<fs::path> files_of(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_regular_file(ec)) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

// One line on a plain safetensors file, from its validated header (safetensors_read_header).
std::string tensor_summary(const SafetensorsHeader& header) {
  std::size_t tensors = 0;
  std::uint64_t floats = 0;  // cannot wrap: the header reader refuses overlapping tensors
  std::string first;
  for (const SafetensorsEntry& t : header.tensors) {
    std::string shape;
    for (const std::int64_t d : t.shape) {
      if (!shape.empty()) shape.push_back(',');  // appends only: GCC 12's -Wrestrict misfires on a + b
      shape.append(std::to_string(d));
    }
    if (tensors < 6) {
      first.append("\n      ").append(printable(t.name)).append(" ").append(printable(t.dtype));
      first.append("[").append(shape).append("]");
    }
    ++tensors;
    floats += t.numel;
  }
  std::string s = std::to_string(tensors) + " tensors, " + std::to_string(floats) + " values";
  if (!header.metadata.empty()) s += ", metadata " + nlohmann::json(header.metadata).dump();
  if (tensors > 6) first += "\n      ... (" + std::to_string(tensors - 6) + " more)";
  return s + first;
}

std::string bytes_text(std::uint64_t n) {
  char buf[48];
  if (n >= (1u << 20)) {
    std::snprintf(buf, sizeof buf, "%llu B (%.1f MiB)", static_cast<unsigned long long>(n),
                  static_cast<double>(n) / (1 << 20));
  } else {
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(n));
  }
  return buf;
}

std::string sealed_header_text(const tee::SealedHeader& h) {
  return "sealed: TTSEAL01 v" + std::to_string(tee::SealedHeader::kVersion) + ", " +
         std::string(tee::cipher_name(h.cipher)) + ", key fingerprint " + tee::to_hex(h.key_fingerprint) +
         " (checkpoint key), chunk " + bytes_text(h.chunk_size) + " x " + std::to_string(h.chunk_count()) +
         ", plaintext " + bytes_text(h.plaintext_size) + "\n      metadata " +
         (h.metadata.empty() ? std::string("(none)") : printable(h.metadata)) +
         " (unauthenticated until verify)";
}

std::vector<std::uint8_t> read_plain(const fs::path& p) {
  const std::vector<std::byte> b = read_file_bytes(p);
  std::vector<std::uint8_t> out(b.size());
  std::transform(b.begin(), b.end(), out.begin(),
                 [](std::byte x) { return std::to_integer<std::uint8_t>(x); });
  return out;
}

// A sealed file's plaintext, for display only (verify is open_verified_checkpoint's job).
std::vector<std::uint8_t> read_sealed(const fs::path& p, const tee::CheckpointKey& key) {
  tee::SealedFileReader r(p, key);
  return r.read_all();
}

// A sharded manifest's layout: the world and stage, then one line per rank (its file and ranges).
std::string layout_summary(const ShardLayout& l) {
  std::string s =
      "\n      layout: sharded, " + std::to_string(l.world) + " ranks at --shard " + enum_name(l.stage) +
      ", " + std::to_string(l.params) + " parameters; " +
      (l.stage == ShardStage::Params ? "the parameters in the shards, model.safetensors the buffers"
                                     : "model.safetensors whole (rank 0)");
  for (int r = 0; r < l.world; ++r) {
    const auto& ranges = l.shards[static_cast<std::size_t>(r)];
    s += "\n      rank " + std::to_string(r) + ": " + optimizer_shard_file(r) + ", " +
         (l.stage == ShardStage::Params ? "parameters and optimizer state, " : "") +
         std::to_string(l.floats(r)) + " floats in " + std::to_string(ranges.size()) +
         (ranges.size() == 1 ? " range" : " ranges");
  }
  return s;
}

// What state.json or the manifest says, in one line (and a sharded layout's lines); strict parsers (a
// malformed file is UNREADABLE).
std::string json_summary(const std::vector<std::uint8_t>& bytes, const fs::path& f) {
  if (plain_name(f) == kStateFile) {
    const CheckpointMeta m = parse_checkpoint_state(bytes, f.string());
    return "step " + std::to_string(m.step) + ", samples consumed " + std::to_string(m.samples_consumed) +
           ", params_sha256 " + m.params_sha256;
  }
  const CheckpointManifest m = parse_manifest(bytes, f.string());
  return "manifest of run " + m.run_id + ", step " + std::to_string(m.step) + " (" + printable(m.dir) +
         "), " + std::to_string(m.files.size()) + " files listed, previous save " +
         (m.prev_step ? step_dir_name(*m.prev_step) : std::string("none (first of its run)")) +
         (m.layout ? layout_summary(*m.layout) : std::string());
}

bool is_json_file(const fs::path& f) {
  const std::string n = plain_name(f);
  return n == kStateFile || n == kManifestFile;
}

// ---- inspect ----

// The manifest's digest, of its bytes on disk as a resume reads them (no key needed): what
// `train --expect-checkpoint` pins and the run's agreed inputs record (engine/run/input_agreement.h).
std::string manifest_digest_line(const fs::path& f) {
  if (plain_name(f) != kManifestFile) return {};
  return "      manifest sha256 " + tee::to_hex(tee::sha256(read_plain(f))) +
         " (pin with --expect-checkpoint)\n";
}

std::string inspect_file(const fs::path& f, const tee::CheckpointKey* key) {
  const std::string name = f.filename().string();
  if (is_sealed(f)) {
    std::string s = sealed_header_text(tee::read_sealed_header(f)) + "\n" + manifest_digest_line(f);
    if (key != nullptr && plain_name(f) == kStateFile) {
      s += "      step " + std::to_string(parse_checkpoint_state(read_sealed(f, *key), f.string()).step) +
           " (decrypted with the given key)\n";
    } else if (key != nullptr && is_json_file(f)) {
      s += "      " + json_summary(read_sealed(f, *key), f) + " (decrypted with the given key)\n";
    }
    return s;
  }
  if (ends_with(name, ".safetensors"))
    return "plain safetensors, " + bytes_text(tee::open_regular_file(f, "checkpoint file").size) + ", " +
           tensor_summary(safetensors_read_header(f)) + "\n";
  if (is_json_file(f)) return "plain, " + json_summary(read_plain(f), f) + "\n" + manifest_digest_line(f);
  if (name == kMarker) {
    const auto b = read_plain(f);
    std::string text(b.begin(), b.end());
    while (!text.empty() && text.back() == '\n') text.pop_back();
    return "completion marker (" + printable(text) + ")\n";
  }
  return bytes_text(tee::open_regular_file(f, "checkpoint file").size) + "\n";
}

std::string inspect_step(const fs::path& dir, const tee::CheckpointKey* key) {
  std::error_code ec;
  std::string out = printable(dir.string()) +
                    (fs::exists(dir / kMarker, ec) ? "" : "  [INCOMPLETE: no COMPLETE marker]") + "\n";
  for (const fs::path& f : files_of(dir)) {
    // Names and whatever a broken file's error quotes of it are the directory's, not ours: one line each.
    out += "  " + printable(f.filename().string()) + ": ";
    try {
      out += inspect_file(f, key);
    } catch (const std::exception& e) {  // inspect describes broken files, it does not stop at them
      out += "UNREADABLE: " + printable(e.what()) + "\n";
    }
  }
  return out;
}

}  // namespace

std::string inspect_checkpoint(const fs::path& path, const tee::CheckpointKey* key) {
  std::string out;
  for (const fs::path& d : step_dirs(path, false)) out += inspect_step(d, key);
  return out;
}

namespace {

// The lineages in `cks` and the index of each one's newest checkpoint: what --resume would take.
std::map<std::string, std::size_t> newest_per_run(const std::vector<VerifiedCheckpoint>& cks) {
  std::map<std::string, std::size_t> newest;
  for (std::size_t i = 0; i < cks.size(); ++i) {
    const auto [it, fresh] = newest.emplace(cks[i].manifest.run_id, i);
    if (!fresh && cks[it->second].manifest.step < cks[i].manifest.step) it->second = i;
  }
  return newest;
}

}  // namespace

VerifyReport verify_checkpoint(const fs::path& path, const tee::CheckpointKey* key,
                               const FreshnessRecord* freshness) {
  std::vector<VerifiedCheckpoint> cks;
  for (const fs::path& d : step_dirs(path, true)) {
    cks.push_back(open_verified_checkpoint(d, key));
    cks.back().model = {};  // only the report and the manifest are needed from here on
    cks.back().optimizer = {};
  }
  const std::map<std::string, std::size_t> newest = newest_per_run(cks);
  VerifyReport r;
  for (std::size_t i = 0; i < cks.size(); ++i) {
    const VerifiedCheckpoint& ck = cks[i];
    std::string fresh;
    if (freshness != nullptr) {
      // The record speaks about the newest save of a run: older ones beside it are its history.
      fresh = newest.at(ck.manifest.run_id) == i
                  ? freshness->check(ck)
                  : "  freshness: superseded by a newer save of this run here\n";
    }
    r.text += ck.dir.string() + "\n" + ck.report + fresh + "  OK\n";
    r.files += ck.files;
    r.chunks += ck.chunks;
    ++r.steps;
  }
  if (freshness == nullptr) {
    r.text +=
        "freshness: not checked (no --key-file): a rollback to an older genuine checkpoint is not "
        "detectable\n";
  }
  return r;
}

ExportResult export_safetensors(const fs::path& path, const tee::CheckpointKey* key, const fs::path& out_path,
                                const FreshnessRecord* freshness) {
  ExportResult r;
  r.step_dir = step_dirs(path, true).back();
  const VerifiedCheckpoint ck = open_verified_checkpoint(r.step_dir, key);
  if (freshness != nullptr) freshness->check(ck);
  const auto bytes = std::as_bytes(std::span(ck.model));
  const DecodedSafetensors st = safetensors_decode(bytes, "model.safetensors");
  r.tensors = st.tensors.size();
  for (const auto& [name, t] : st.tensors) r.params += t.data.size();
  write_file_atomic(out_path, bytes);
  r.text = "exported " + r.step_dir.string() + " model (" + std::to_string(r.tensors) + " tensors, " +
           std::to_string(r.params) + " parameters) to " + out_path.string() + " (plaintext safetensors)";
  return r;
}

}  // namespace tt
