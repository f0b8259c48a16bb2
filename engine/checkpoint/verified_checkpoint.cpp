#include "engine/checkpoint/verified_checkpoint.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <span>

#include "base/error.h"
#include "base/untrusted_json.h"
#include "engine/checkpoint/safetensors.h"
#include "tee/crypto/sealed_file.h"
#include "tee/digest.h"
#include "tee/errors.h"
#include "tee/regular_file.h"
#include "tee/unique_fd.h"

namespace tt {
namespace fs = std::filesystem;

namespace {

constexpr std::uint64_t kMaxManifestBytes = std::uint64_t{1} << 20;  // a real one is under 1 KiB
constexpr std::string_view kSealedMagic = "TTSEAL01";
constexpr std::string_view kSealedSuffix = ".sealed";

[[noreturn]] void refuse(const fs::path& p, const std::string& why) {
  throw IntegrityError(p.string() + ": " + why);
}

bool ends_with_sealed(const std::string& n) {
  return n.size() > kSealedSuffix.size() &&
         n.compare(n.size() - kSealedSuffix.size(), kSealedSuffix.size(), kSealedSuffix) == 0;
}

std::string base_name(const std::string& n) {
  return ends_with_sealed(n) ? n.substr(0, n.size() - kSealedSuffix.size()) : n;
}

// A file of the checkpoint, opened without blocking and without following a link (Note [Opening a
// user's file], tee/regular_file.h). Missing or a link is the checkpoint's integrity failure; a
// FIFO, device or directory is refused as input (exit 2) before anything could block on it.
tee::RegularFile open_listed(const fs::path& path) {
  tee::OpenAttempt a = tee::try_open_regular(path, tee::FollowLinks::No);
  if (a.ok()) return std::move(a.file);
  if (a.error == ENOENT) refuse(path, "missing");
  if (a.error == ELOOP) refuse(path, "is a symbolic link (refused in a checkpoint)");
  throw InputError("checkpoint file '" + tee::printable_path(path) + "': " + a.why());
}

// The whole file in one read through one descriptor: what is hashed is what is used.
std::vector<std::uint8_t> read_once(const fs::path& path, std::uint64_t max_size) {
  const tee::RegularFile f = open_listed(path);
  const std::uint64_t size = f.size;
  if (size > max_size)
    refuse(path, std::to_string(size) + " bytes, more than the " + std::to_string(max_size) + " expected");
  std::vector<std::uint8_t> raw(static_cast<std::size_t>(size));
  std::uint8_t extra = 0;
  if (tee::pread_full(f.fd.get(), raw, 0) != static_cast<long long>(size) ||
      tee::pread_full(f.fd.get(), tee::MutableByteView(&extra, 1), size) != 0)
    refuse(path, "changed size while being read");
  return raw;
}

// Opens sealed bytes from a private in-memory file (memfd), never from the checkpoint directory
// again: the bytes opened are the bytes hashed. Error messages name the real file.
void open_sealed_copy(std::vector<std::uint8_t>& raw, const fs::path& path, const tee::CheckpointKey& key,
                      CheckedFile& out) {
  tee::UniqueFd mem(::memfd_create("teetrain-checkpoint", MFD_CLOEXEC));
  if (!mem || !tee::pwrite_full(mem.get(), raw, 0))
    throw RunError(path.string() + ": cannot make a private copy (" + std::strerror(errno) + ")");
  raw = {};  // the ciphertext now lives only in the private copy
  const std::string proc = "/proc/self/fd/" + std::to_string(mem.get());
  try {
    tee::SealedFileReader r(proc, key);
    out.chunks = r.chunk_count();
    out.sealed_metadata = r.header().metadata;
    out.plain = r.read_all();
  } catch (const IntegrityError& e) {
    std::string what = e.what();
    for (std::size_t at = what.find(proc); at != std::string::npos;
         at = what.find(proc, at + path.string().size()))
      what.replace(at, proc.size(), path.string());
    throw IntegrityError(what);
  }
}

// A sealed header names the file it was written as (sealed_codec.h), authenticated once its chunks
// opened: a second binding of each file to its name, independent of the manifest's digests; a shard's
// header names its step too, which must be `step` (the manifest's) where given.
void check_sealed_name(const CheckedFile& f, const fs::path& p, std::optional<long> step = std::nullopt) {
  if (f.chunks == 0) return;
  const auto meta = parse_untrusted_json(f.sealed_metadata);
  const std::string name = p.filename().string();
  if (!meta.is_object() || !meta.contains("name") || meta["name"] != name)
    refuse(p, "its sealed header was written for another file (metadata " + f.sealed_metadata + ")");
  if (step && meta.contains("step") && meta["step"] != *step)
    refuse(p, "its sealed header was written at another step (metadata " + f.sealed_metadata + ")");
}

// The directory as an absolute path without a trailing separator: "ck/step_5/" and "." have names.
fs::path absolute_dir(const fs::path& dir) {
  fs::path n = fs::absolute(dir).lexically_normal();
  if (!n.has_filename()) n = n.parent_path();
  return n;
}

std::string file_line(const fs::path& p, const CheckedFile& f) {
  return "  " + p.filename().string() + ": " +
         (f.chunks > 0 ? "sealed, " + std::to_string(f.chunks) + " chunks ok" : std::string("plain"));
}

// The manifest: present (the sealed one whenever a key is given), opens, parses, names this directory.
void open_manifest(VerifiedCheckpoint& ck, const tee::CheckpointKey* key) {
  const fs::path sealed = ck.dir / (std::string(kManifestFile) + ".sealed");
  const fs::path plain = ck.dir / kManifestFile;
  std::error_code ec;
  const bool has_sealed = fs::exists(fs::symlink_status(sealed, ec));
  const bool has_plain = fs::exists(fs::symlink_status(plain, ec));
  if (key != nullptr && !has_sealed && has_plain)
    refuse(plain,
           "a plaintext manifest, but a key was given (a sealed checkpoint's is manifest.json.sealed)");
  if (!has_sealed && !has_plain)
    refuse(key != nullptr ? sealed : plain,
           "missing (the manifest was deleted, or the checkpoint predates manifests)");
  ck.manifest_path = has_sealed ? sealed : plain;  // both present: the other is refused as unlisted
  const CheckedFile f = read_checkpoint_file(ck.manifest_path, key, kMaxManifestBytes);
  check_sealed_name(f, ck.manifest_path);
  ck.manifest = parse_manifest(f.plain, ck.manifest_path.string());
  ck.manifest_sha256 = f.sha256;
  ck.sealed = f.chunks > 0;
  ck.chunks += f.chunks;
  ++ck.files;
  const std::string actual = absolute_dir(ck.dir).filename().string();
  if (ck.manifest.dir != actual)
    refuse(ck.manifest_path, "written for " + ck.manifest.dir + " but the directory is " + actual +
                                 " (a renamed or moved checkpoint)");
  if (ends_with_sealed(ck.manifest.files.front().name) != ck.sealed)
    refuse(ck.manifest_path,
           ck.sealed ? "a sealed manifest lists plaintext files" : "a plaintext manifest lists sealed files");
  ck.report += file_line(ck.manifest_path, f) + ", run " + ck.manifest.run_id + ", step " +
               std::to_string(ck.manifest.step) + ", names this directory\n";
  if (const auto& l = ck.manifest.layout)
    ck.report += "  layout: sharded, " + std::to_string(l->world) + " ranks at --shard " +
                 enum_name(l->stage) + ", " + std::to_string(l->params) + " parameters\n";
}

// Nothing in the directory beyond the marker, the manifest and what the manifest lists.
void check_listing(const VerifiedCheckpoint& ck) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(ck.dir, ec)) {
    const std::string n = e.path().filename().string();
    if (n == kCheckpointMarker || n == ck.manifest_path.filename().string()) continue;
    if (ck.manifest.find(n) == nullptr)
      refuse(e.path(), "not listed in the manifest (a file added to the checkpoint)");
  }
  if (ec) throw InputError(ck.dir.string() + ": cannot list (" + ec.message() + ")");
}

// A listed file with the recorded size; read (once) and matched against the recorded digest.
CheckedFile checked_file(VerifiedCheckpoint& ck, const ManifestFile& mf, const tee::CheckpointKey* key,
                         bool read) {
  const fs::path p = ck.dir / mf.name;
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(p, ec))) refuse(p, "listed in the manifest but missing");
  const std::uint64_t size = open_listed(p).size;
  if (size != mf.size)
    refuse(p, std::to_string(size) + " bytes, the manifest records " + std::to_string(mf.size));
  CheckedFile f;
  if (!read) return f;
  f = read_checkpoint_file(p, key, mf.size);
  if (f.size != mf.size || f.sha256 != mf.sha256)
    refuse(p, "SHA-256 differs from the manifest's (a file from another checkpoint, or edited)");
  check_sealed_name(f, p, ck.manifest.step);
  ck.chunks += f.chunks;
  ++ck.files;
  return f;
}

std::size_t parse_tensors(const std::vector<std::uint8_t>& bytes, const fs::path& p) {
  try {
    return safetensors_decode(std::as_bytes(std::span(bytes)), p.string()).tensors.size();
  } catch (const InputError& e) {
    throw IntegrityError(e.what());  // it opened (or is plain) and matched, yet does not parse
  }
}

// params_sha256 is SHA-256 of the flat parameter buffer, which the model file's data section starts
// with (tensors in parameter-table order, contiguous; buffers follow): this ties model to state.
std::string check_params_digest(const VerifiedCheckpoint& ck, const fs::path& p) {
  const std::span<const std::uint8_t> m(ck.model);
  // The one safetensors header parser says where the data section starts (the file parsed already).
  const std::uint64_t offset = safetensors_parse_header(std::as_bytes(m), p.string()).data_offset;
  const std::span<const std::uint8_t> data = m.subspan(static_cast<std::size_t>(offset));
  if (ck.meta.param_floats > data.size() / sizeof(float))
    refuse(p, "holds fewer values than the " + std::to_string(ck.meta.param_floats) +
                  " parameters state.json records");
  const std::string digest =
      tee::to_hex(tee::sha256(data.first(static_cast<std::size_t>(ck.meta.param_floats) * 4)));
  if (digest != ck.meta.params_sha256)
    refuse(p, "parameters hash to " + digest + " but state.json records " + ck.meta.params_sha256);
  return "  params_sha256 " + digest + " matches state.json\n";
}

// The lineage's previous save, when it is present beside this one, must be the one it followed.
std::string check_chain_link(const VerifiedCheckpoint& ck, const tee::CheckpointKey* key) {
  if (!ck.manifest.prev_step) return "  chain: first save of run " + ck.manifest.run_id + "\n";
  const std::string prev_name = step_dir_name(*ck.manifest.prev_step);
  const fs::path prev_dir = absolute_dir(ck.dir).parent_path() / prev_name;
  std::error_code ec;
  if (!fs::exists(prev_dir / kCheckpointMarker, ec))
    return "  chain: previous save " + prev_name + " not present (pruned or elsewhere); link not checked\n";
  const fs::path pm = prev_dir / ck.manifest_path.filename();
  const CheckedFile f = read_checkpoint_file(pm, key, kMaxManifestBytes);
  const CheckpointManifest prev = parse_manifest(f.plain, pm.string());
  if (prev.run_id != ck.manifest.run_id)
    return "  chain: " + prev_name + " belongs to another run (its step was re-used); link not checked\n";
  if (f.sha256 != *ck.manifest.prev_manifest_sha256)
    refuse(pm, "chain broken: " + ck.manifest.dir + " was saved after a different " + prev_name +
                   " of this run (a checkpoint was replaced, or an older one resumed into this directory)");
  return "  chain: follows " + prev_name + " (prev_manifest_sha256 matches)\n";
}

// A shard names its rank and step, and each slot tensor holds its ranges' floats: a shard of another
// rank or step under this name fails here even where the manifest is not authenticated (plain mode).
std::string check_shard(const std::vector<std::uint8_t>& bytes, const ShardLayout& layout, int rank,
                        long step, const fs::path& p) {
  DecodedSafetensors st;
  try {
    st = safetensors_decode(std::as_bytes(std::span(bytes)), p.string());
  } catch (const InputError& e) {
    throw IntegrityError(e.what());
  }
  const auto named = [&](const char* key) {
    const auto it = st.metadata.find(key);
    return it == st.metadata.end() ? std::string("none") : it->second;
  };
  if (named("rank") != std::to_string(rank) || named("step") != std::to_string(step))
    refuse(p, "holds the shard of rank " + named("rank") + " at step " + named("step") + ", not rank " +
                  std::to_string(rank) + "'s at step " + std::to_string(step) + " (a shard swapped in)");
  if ((layout.stage == ShardStage::Params) != (st.tensors.count(kParamsShardTensor) > 0))
    refuse(p, layout.stage == ShardStage::Params
                  ? "holds no parameter shard (tensor 'params') at --shard params"
                  : "holds a parameter shard, but the layout is not --shard params");
  const std::uint64_t floats = layout.floats(rank);
  for (const auto& [name, t] : st.tensors)
    if (t.shape != std::vector<int64_t>{static_cast<int64_t>(floats)})
      refuse(p, "tensor '" + name + "' is not the " + std::to_string(floats) + " floats of rank " +
                    std::to_string(rank) + "'s ranges");
  return ", rank " + std::to_string(rank) + " at step " + std::to_string(step) + ", " +
         std::to_string(st.tensors.size()) + " tensors of " + std::to_string(floats) + " floats";
}

// Note [Parameter shards in the optimizer shard's file] (checkpoint_manifest.h): the model file's
// parameter table, read strictly (its bytes matched the manifest, yet plain mode authenticates nothing).
std::vector<SafetensorsEntry> param_table(const SafetensorsHeader& h, std::uint64_t params,
                                          const fs::path& p) {
  const auto it = h.metadata.find(kParamTableKey);
  if (it == h.metadata.end()) refuse(p, "names no parameters (no param_table) for its parameter shards");
  const nlohmann::json t = nlohmann::json::parse(it->second, nullptr, false);
  if (!t.is_array()) refuse(p, "param_table is not a list");
  std::vector<SafetensorsEntry> out;
  std::uint64_t total = 0;
  for (const nlohmann::json& e : t) {
    if (!e.is_object() || !e.contains("name") || !e["name"].is_string() || !e.contains("shape") ||
        !e["shape"].is_array())
      refuse(p, "param_table has an entry without a name and shape");
    SafetensorsEntry x{.name = e["name"], .dtype = "F32", .shape = {}, .numel = 1, .begin = 0, .end = 0};
    for (const nlohmann::json& d : e["shape"]) {
      if (!d.is_number_unsigned() || d.get<std::uint64_t>() > params)
        refuse(p, "param_table has a shape out of range");
      x.shape.push_back(d.get<int64_t>());
      x.numel *= d.get<std::uint64_t>();
      if (x.numel > params) refuse(p, "param_table has a shape out of range");
    }
    total += x.numel;
    if (total > params) break;
    out.push_back(std::move(x));
  }
  if (total != params)
    refuse(p, "param_table names " + std::to_string(total) + " parameters, the layout " +
                  std::to_string(params));
  return out;
}

// Every rank's parameter shard and the model file's buffers as the whole model.safetensors the whole
// layout writes (parameters in table order, then the buffers in file order): what the params digest,
// resharding and `ckpt export` read.
std::vector<std::uint8_t> assemble_model(const VerifiedCheckpoint& ck, const fs::path& p) {
  const ShardLayout& l = *ck.manifest.layout;
  const auto bytes = std::as_bytes(std::span(ck.model));
  const SafetensorsHeader h = safetensors_parse_header(bytes, p.string());
  const std::vector<SafetensorsEntry> table = param_table(h, l.params, p);
  std::vector<float> flat(l.params);  // [params]: the flat parameter buffer
  for (int r = 0; r < l.world; ++r) {
    const fs::path f = ck.dir / (optimizer_shard_file(r) + (ck.sealed ? ".sealed" : ""));
    const DecodedSafetensors st =
        safetensors_decode(std::as_bytes(std::span(ck.shards[static_cast<std::size_t>(r)])), f.string());
    const auto it = st.tensors.find(kParamsShardTensor);
    if (it == st.tensors.end()) refuse(f, "holds no parameter shard (tensor 'params') at --shard params");
    std::size_t at = 0;
    for (const ParamRange& range : l.shards[static_cast<std::size_t>(r)]) {
      std::copy_n(it->second.data.begin() + static_cast<std::ptrdiff_t>(at), range.count,
                  flat.begin() + static_cast<std::ptrdiff_t>(range.offset));
      at += range.count;
    }
  }
  const DecodedSafetensors buffers = safetensors_decode(bytes, p.string());
  std::vector<SafeTensor> tensors;
  std::size_t offset = 0;
  for (const SafetensorsEntry& e : table) {
    tensors.push_back({e.name, e.shape, std::span<const float>(flat).subspan(offset, e.numel)});
    offset += e.numel;
  }
  for (const SafetensorsEntry& e : h.tensors) {
    const DecodedTensor& t = buffers.tensors.at(e.name);
    tensors.push_back({e.name, t.shape, std::span<const float>(t.data)});
  }
  const std::vector<std::byte> out = safetensors_encode(tensors, {{"format", "pt"}});
  std::vector<std::uint8_t> model(out.size());
  std::transform(out.begin(), out.end(), model.begin(),
                 [](std::byte b) { return std::to_integer<std::uint8_t>(b); });
  return model;
}

// Which optimizer shards a reader needs: its own when its ranges are the layout's, else all.
bool reads_shard(const VerifiedCheckpoint& ck, const ShardWant* want, int rank) {
  if (want == nullptr || !ck.own_shard) return true;
  return rank == want->rank;
}

bool same_ranges(const std::vector<ParamRange>& a, const std::vector<ParamRange>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const ParamRange& x, const ParamRange& y) {
    return x.offset == y.offset && x.count == y.count;
  });
}

void check_files(VerifiedCheckpoint& ck, const tee::CheckpointKey* key, VerifyScope scope,
                 const ShardWant* want) {
  if (ck.manifest.layout) {
    const ShardLayout& l = *ck.manifest.layout;
    ck.shards.resize(static_cast<std::size_t>(l.world));
    ck.own_shard = want != nullptr && want->rank < l.world &&
                   same_ranges(l.shards[static_cast<std::size_t>(want->rank)], want->ranges);
  }
  // state.json first: the model's digest is checked against it.
  std::vector<const ManifestFile*> order;
  for (const ManifestFile& f : ck.manifest.files) order.push_back(&f);
  std::stable_partition(order.begin(), order.end(),
                        [](const ManifestFile* f) { return base_name(f->name) == kStateFile; });
  for (const ManifestFile* mf : order) {
    const std::string base = base_name(mf->name);
    const fs::path p = ck.dir / mf->name;
    // The optimizer shard's rank, or -1 for the other files (a plain int: GCC 12 misreads an optional here).
    const int shard = ck.manifest.layout ? parse_optimizer_shard_file(base).value_or(-1) : -1;
    const bool needed = shard < 0 || reads_shard(ck, want, shard);
    CheckedFile f = checked_file(ck, *mf, key, (scope == VerifyScope::Full && needed) || base == kStateFile);
    if (f.sha256.empty()) continue;  // State scope: size checked, content not read
    std::string line = file_line(p, f) + ", size and sha256 as listed";
    if (base == kStateFile) {
      ck.meta = parse_checkpoint_state(f.plain, p.string());
      if (ck.meta.step != ck.manifest.step)
        refuse(p, "step " + std::to_string(ck.meta.step) + ", but the manifest says " +
                      std::to_string(ck.manifest.step));
      line += ", step " + std::to_string(ck.meta.step);
    } else if (shard >= 0) {
      line += check_shard(f.plain, *ck.manifest.layout, shard, ck.manifest.step, p);
      ck.shards[static_cast<std::size_t>(shard)] = std::move(f.plain);
    } else {
      line += ", " + std::to_string(parse_tensors(f.plain, p)) + " tensors parse";
      (base == kModelFile ? ck.model : ck.optimizer) = std::move(f.plain);
    }
    ck.report += line + "\n";
  }
  if (scope != VerifyScope::Full) return;
  const ManifestFile* model = ck.manifest.find(kModelFile + std::string(ck.sealed ? ".sealed" : ""));
  const fs::path mp = ck.dir / model->name;
  if (ck.manifest.layout && ck.manifest.layout->stage == ShardStage::Params) {
    // A rank reading its own shard alone checks the digest once the parameters are gathered (resume).
    if (ck.own_shard) {
      ck.report += "  params_sha256: checked after the ranks gather their parameter shards\n";
      return;
    }
    ck.model = assemble_model(ck, mp);
    ck.report +=
        "  model reassembled from " + std::to_string(ck.manifest.layout->world) + " parameter shards\n";
  }
  ck.report += check_params_digest(ck, mp);
}

}  // namespace

CheckedFile read_checkpoint_file(const fs::path& path, const tee::CheckpointKey* key,
                                 std::uint64_t max_size) {
  std::vector<std::uint8_t> raw = read_once(path, max_size);
  CheckedFile out;
  out.size = raw.size();
  out.sha256 = tee::to_hex(tee::sha256(raw));
  const bool sealed =
      raw.size() >= kSealedMagic.size() && std::equal(kSealedMagic.begin(), kSealedMagic.end(), raw.begin());
  const bool sealed_name = ends_with_sealed(path.filename().string());
  if (!sealed) {
    if (key != nullptr) refuse(path, "plaintext where a sealed file is required (a key was given)");
    if (sealed_name) refuse(path, "plaintext under a sealed file's name");
    out.plain = std::move(raw);
    return out;
  }
  if (!sealed_name) refuse(path, "sealed bytes under a plaintext file's name");
  if (key == nullptr)
    throw InputError(path.string() +
                     " is sealed; this needs the key (--key-file, the master key the run used)");
  open_sealed_copy(raw, path, *key, out);
  return out;
}

VerifiedCheckpoint open_verified_checkpoint(const fs::path& step_dir, const tee::CheckpointKey* key,
                                            VerifyScope scope, const ShardWant* want) {
  std::error_code ec;
  if (!fs::is_directory(step_dir, ec))
    throw InputError("checkpoint '" + step_dir.string() + "': no such directory");
  VerifiedCheckpoint ck;
  ck.dir = step_dir.has_filename() ? step_dir : step_dir.parent_path();  // "ck/step_5/" names ck/step_5
  if (!fs::exists(ck.dir / kCheckpointMarker, ec))
    refuse(ck.dir, "incomplete checkpoint (no COMPLETE marker): a save was interrupted");
  open_manifest(ck, key);
  check_listing(ck);
  check_files(ck, key, scope, want);
  if (scope == VerifyScope::Full) ck.report += check_chain_link(ck, key);
  return ck;
}

}  // namespace tt
