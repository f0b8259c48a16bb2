#include "engine/ckpt_tools.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "engine/checkpoint.h"
#include "engine/core/error.h"
#include "engine/file_util.h"
#include "engine/safetensors.h"
#include "tee/digest.h"
#include "tee/errors.h"
#include "tee/sealed_file.h"

namespace tt {
namespace fs = std::filesystem;

namespace {

constexpr const char* kMarker = "COMPLETE";  // as written by CheckpointStore
constexpr const char* kSealedSuffix = ".sealed";

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool is_sealed(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  char magic[8] = {};
  return in.read(magic, sizeof magic) && std::string_view(magic, sizeof magic) == "TTSEAL01";
}

// The file's name without ".sealed": what its plaintext is.
std::string plain_name(const fs::path& p) {
  std::string n = p.filename().string();
  if (ends_with(n, kSealedSuffix)) n.resize(n.size() - std::string_view(kSealedSuffix).size());
  return n;
}

bool is_step_dir(const fs::path& p) {
  return fs::exists(p / kMarker) || fs::exists(p / "model.safetensors") ||
         fs::exists(p / (std::string("model.safetensors") + kSealedSuffix));
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
    if (complete_only && !fs::exists(e.path() / kMarker)) continue;
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
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file()) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

// The safetensors JSON header and where the tensor data starts (8 + header length).
struct StHeader {
  nlohmann::ordered_json json;  // file order, so inspect lists tensors as stored
  std::uint64_t data_offset = 0;
};
StHeader parse_st_header(const unsigned char* data, std::size_t size, const std::string& what) {
  if (size < 8) throw InputError(what + ": not a valid safetensors file (too short)");
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | data[i];
  if (n > size - 8)
    throw InputError(what + ": not a valid safetensors file (header length exceeds the file)");
  StHeader h;
  try {
    h.json = nlohmann::ordered_json::parse(reinterpret_cast<const char*>(data) + 8,
                                           reinterpret_cast<const char*>(data) + 8 + n);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(what + ": not a valid safetensors file (" + e.what() + ")");
  }
  h.data_offset = 8 + n;
  return h;
}

// Reads only the header of a plain safetensors file (a model file may be hundreds of MB).
StHeader read_st_header(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  unsigned char len[8] = {};
  if (!in.read(reinterpret_cast<char*>(len), 8))
    throw InputError(p.string() + ": not a valid safetensors file");
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | len[i];
  if (n > (std::uint64_t{1} << 30))
    throw InputError(p.string() + ": not a valid safetensors file (huge header)");
  std::vector<unsigned char> buf(8 + n);
  std::copy_n(len, 8, buf.begin());
  if (!in.read(reinterpret_cast<char*>(buf.data() + 8), static_cast<std::streamsize>(n)))
    throw InputError(p.string() + ": not a valid safetensors file (truncated header)");
  return parse_st_header(buf.data(), buf.size(), p.string());
}

std::string tensor_summary(const nlohmann::ordered_json& header) {
  std::size_t tensors = 0;
  std::uint64_t floats = 0;
  std::string first;
  std::string meta;
  for (const auto& [name, v] : header.items()) {
    if (name == "__metadata__") {
      meta = v.dump();
      continue;
    }
    std::uint64_t numel = 1;
    std::string shape;
    for (const auto& d : v.value("shape", nlohmann::ordered_json::array())) {
      numel *= d.get<std::uint64_t>();
      if (!shape.empty()) shape.push_back(',');  // appends only: GCC 12's -Wrestrict misfires on a + b
      shape.append(std::to_string(d.get<std::int64_t>()));
    }
    if (tensors < 6) {
      first.append("\n      ").append(name).append(" ").append(v.value("dtype", "?"));
      first.append("[").append(shape).append("]");
    }
    ++tensors;
    floats += numel;
  }
  std::string s = std::to_string(tensors) + " tensors, " + std::to_string(floats) + " values";
  if (!meta.empty()) s += ", metadata " + meta;
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
         (h.metadata.empty() ? std::string("(none)") : h.metadata) + " (unauthenticated until verify)";
}

nlohmann::json parse_state(const std::vector<std::uint8_t>& bytes, const std::string& what) {
  try {
    return nlohmann::json::parse(bytes.begin(), bytes.end());
  } catch (const nlohmann::json::exception& e) {
    throw tee::IntegrityError(what + ": not valid JSON (" + e.what() + ")");
  }
}

std::vector<std::uint8_t> read_plain(const fs::path& p) {
  const std::vector<std::byte> b = read_file_bytes(p);
  std::vector<std::uint8_t> out(b.size());
  std::transform(b.begin(), b.end(), out.begin(),
                 [](std::byte x) { return std::to_integer<std::uint8_t>(x); });
  return out;
}

// A file's plaintext: opened (every chunk verified) when sealed, read as is when plain.
std::vector<std::uint8_t> read_any(const fs::path& p, const tee::SecretBytes* key, std::uint64_t* chunks) {
  if (!is_sealed(p)) return read_plain(p);
  if (key == nullptr) {
    throw InputError(p.string() + " is sealed; this needs the key (--key FILE, the master key the run used)");
  }
  tee::SealedFileReader r(p, *key);
  if (chunks != nullptr) *chunks += r.chunk_count();
  return r.read_all();
}

// ---- inspect ----

std::string inspect_step(const fs::path& dir, const tee::SecretBytes* key) {
  std::ostringstream out;
  out << dir.string() << (fs::exists(dir / kMarker) ? "" : "  [INCOMPLETE: no COMPLETE marker]") << "\n";
  for (const fs::path& f : files_of(dir)) {
    const std::string name = f.filename().string();
    out << "  " << name << ": ";
    try {
      if (is_sealed(f)) {
        const tee::SealedHeader h = tee::read_sealed_header(f);
        out << sealed_header_text(h) << "\n";
        if (key != nullptr && plain_name(f) == "state.json") {
          const nlohmann::json j = parse_state(read_any(f, key, nullptr), f.string());
          out << "      step " << j.value("step", -1L) << " (decrypted with the given key)\n";
        }
      } else if (ends_with(name, ".safetensors")) {
        out << "plain safetensors, " << bytes_text(fs::file_size(f)) << ", "
            << tensor_summary(read_st_header(f).json) << "\n";
      } else if (name == "state.json") {
        const nlohmann::json j = parse_state(read_plain(f), f.string());
        out << "plain, step " << j.value("step", -1L) << ", samples consumed "
            << j.value("samples_consumed", 0ULL) << ", params_sha256 " << j.value("params_sha256", "")
            << "\n";
      } else if (name == kMarker) {
        const auto b = read_plain(f);
        std::string text(b.begin(), b.end());
        while (!text.empty() && text.back() == '\n') text.pop_back();
        out << "completion marker (" << text << ")\n";
      } else {
        out << bytes_text(fs::file_size(f)) << "\n";
      }
    } catch (const std::exception& e) {  // inspect describes broken files, it does not stop at them
      out << "UNREADABLE: " << e.what() << "\n";
    }
  }
  return out.str();
}

// ---- verify ----

struct StepCheck {
  std::uint64_t chunks = 0;
  int files = 0;
  std::string lines;
  std::vector<std::uint8_t> model;  // plaintext model.safetensors, for export
};

// `what`-named IntegrityError for content that opened (or was plain) but does not parse.
template <typename F>
auto as_integrity(const std::string& what, F&& f) {
  try {
    return f();
  } catch (const InputError& e) {
    throw tee::IntegrityError(std::string(e.what()) + " (" + what + ")");
  }
}

StepCheck check_step(const fs::path& dir, const tee::SecretBytes* key) {
  if (!fs::exists(dir / kMarker)) {
    throw tee::IntegrityError(dir.string() +
                              ": incomplete checkpoint (no COMPLETE marker): a save was interrupted");
  }
  StepCheck c;
  nlohmann::json state;
  bool have_state = false;
  for (const fs::path& f : files_of(dir)) {
    const std::string name = plain_name(f);
    if (name == kMarker) continue;
    std::uint64_t chunks = 0;
    const std::vector<std::uint8_t> bytes = read_any(f, key, &chunks);  // throws on a bad chunk
    std::string line =
        "  " + f.filename().string() + ": " +
        (chunks > 0 ? "sealed, " + std::to_string(chunks) + " chunks ok" : std::string("plain"));
    if (ends_with(name, ".safetensors")) {
      const auto span = std::as_bytes(std::span(bytes.data(), bytes.size()));
      const DecodedSafetensors st =
          as_integrity("checkpoint file", [&] { return safetensors_decode(span, f.string()); });
      line += ", " + std::to_string(st.tensors.size()) + " tensors parse";
      if (name == "model.safetensors") c.model = bytes;
    } else if (name == "state.json") {
      state = parse_state(bytes, f.string());
      have_state = true;
      line += ", step " + std::to_string(state.value("step", -1L));
    }
    c.lines += line + "\n";
    c.chunks += chunks;
    ++c.files;
  }
  if (c.model.empty() || !have_state) {
    throw tee::IntegrityError(dir.string() + ": checkpoint is missing " +
                              (c.model.empty() ? "model.safetensors" : "state.json") + " (plain or sealed)");
  }
  // The directory name and the sealed state must agree: a renamed or swapped directory fails.
  const std::string dname = dir.filename().string();
  char expect[32];
  std::snprintf(expect, sizeof expect, "step_%08ld", state.value("step", -1L));
  if (dname.rfind("step_", 0) == 0 && dname != expect) {
    throw tee::IntegrityError(dir.string() + ": state.json says step " +
                              std::to_string(state.value("step", -1L)) + " but the directory is " + dname);
  }
  // params_sha256 is SHA-256 of the flat parameter buffer; the model file's data section is that
  // buffer (tensors in parameter-table order, contiguous), so the two digests must match. This ties
  // the model file to the state file and catches edits to a plain model.
  const StHeader h = parse_st_header(c.model.data(), c.model.size(), "model.safetensors");
  const auto data = std::span(c.model).subspan(static_cast<std::size_t>(h.data_offset));
  const std::string digest = tee::to_hex(tee::sha256(data));
  const std::string recorded = state.value("params_sha256", "");
  if (!recorded.empty() && digest != recorded) {
    throw tee::IntegrityError(dir.string() + ": model parameters hash to " + digest +
                              " but state.json records " + recorded);
  }
  c.lines += "  params_sha256 " +
             (recorded.empty() ? digest + " (not recorded in state.json)" : digest + " matches state.json") +
             "\n";
  return c;
}

}  // namespace

std::string inspect_checkpoint(const fs::path& path, const tee::SecretBytes* key) {
  std::string out;
  for (const fs::path& d : step_dirs(path, false)) out += inspect_step(d, key);
  return out;
}

VerifyReport verify_checkpoint(const fs::path& path, const tee::SecretBytes* key) {
  VerifyReport r;
  for (const fs::path& d : step_dirs(path, true)) {
    const StepCheck c = check_step(d, key);
    r.text += d.string() + "\n" + c.lines + "  OK\n";
    r.files += c.files;
    r.chunks += c.chunks;
    ++r.steps;
  }
  return r;
}

ExportResult export_safetensors(const fs::path& path, const tee::SecretBytes* key, const fs::path& out_path) {
  ExportResult r;
  r.step_dir = step_dirs(path, true).back();
  const StepCheck c = check_step(r.step_dir, key);
  const DecodedSafetensors st =
      safetensors_decode(std::as_bytes(std::span(c.model.data(), c.model.size())), "model.safetensors");
  r.tensors = st.tensors.size();
  for (const auto& [name, t] : st.tensors) r.params += t.data.size();
  write_file_atomic(out_path, std::as_bytes(std::span(c.model.data(), c.model.size())));
  r.text = "exported " + r.step_dir.string() + " model (" + std::to_string(r.tensors) + " tensors, " +
           std::to_string(r.params) + " parameters) to " + out_path.string() + " (plaintext safetensors)";
  return r;
}

}  // namespace tt
