#include "data/text_prepare.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <system_error>

#include "base/error.h"
#include "data/token_shard.h"
#include "tee/regular_file.h"

namespace tt {
namespace fs = std::filesystem;

namespace {

// Built by appending: GCC 12's -Wrestrict misfires on `"'" + p.string() + "'"` at -O3.
std::string read_file(const fs::path& path) {
  const std::vector<std::uint8_t> b = tee::read_regular_file(path, "text file", UINT64_MAX);
  return {b.begin(), b.end()};
}

bool is_utf8_continuation(char c) {
  return (static_cast<unsigned char>(c) & 0xC0) == 0x80;
}

// Files a directory contributes: see PrepareTextOptions::inputs.
std::vector<fs::path> text_files_in(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) throw InputError("prepare-text: cannot list " + tee::quoted_path(dir) + " (" + ec.message() + ")");
  for (const auto& entry : it) {
    const auto name = entry.path().filename().string();
    const auto ext = entry.path().extension();
    if (name.empty() || name[0] == '.' || ext == ".dat" || ext == ".u8") continue;
    if (entry.is_symlink() || !entry.is_regular_file()) continue;
    out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Cuts a fortune-format file into documents at "%" lines; empty documents are dropped.
std::vector<std::string> split_documents(const std::string& text) {
  std::vector<std::string> docs;
  std::string cur;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    const bool has_newline = end != std::string::npos;
    if (!has_newline) end = text.size();
    const std::string_view line(text.data() + pos, end - pos);
    if (line == "%") {
      docs.push_back(std::move(cur));
      cur.clear();
    } else {
      cur.append(line);
      cur.push_back('\n');  // a final line without newline gets one, so "%" stays on its own line
    }
    pos = has_newline ? end + 1 : end;
  }
  docs.push_back(std::move(cur));
  std::erase_if(docs,
                [](const std::string& d) { return d.find_first_not_of(" \t\r\n") == std::string::npos; });
  return docs;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

void write_text_atomically(const fs::path& path, const std::string& text) {
  fs::path tmp = path;
  tmp += ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) throw RunError("cannot write " + tee::quoted_path(tmp));
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec)
    throw RunError("cannot rename " + tee::quoted_path(tmp) + " to " + tee::quoted_path(path) + ": " +
                   ec.message());
}

std::string manifest_json(const PrepareTextOptions& o, const PrepareTextStats& s) {
  std::ostringstream j;
  j << "{\n  \"format\": \"teetrain-text-shards\",\n  \"version\": 1,\n"
    << "  \"tokenizer\": \"bytes\",\n  \"vocab\": " << kByteVocab << ",\n"
    << "  \"document_separator\": " << json_string("%\n") << ",\n"
    << "  \"split\": {\"rule\": \"every val_every-th document goes to val\", \"val_every\": " << o.val_every
    << "},\n  \"files\": {\"train\": " << json_string(s.train_path.filename().string())
    << ", \"val\": " << json_string(s.val_path.filename().string()) << "},\n"
    << "  \"documents\": {\"train\": " << s.train_documents << ", \"val\": " << s.val_documents << "},\n"
    << "  \"tokens\": {\"train\": " << s.train_tokens << ", \"val\": " << s.val_tokens << "},\n"
    << "  \"sources\": [";
  for (std::size_t i = 0; i < s.sources.size(); ++i) {
    j << (i ? ",\n    " : "\n    ") << json_string(s.sources[i].string());
  }
  j << "\n  ]\n}\n";
  return std::move(j).str();
}

}  // namespace

std::string resolve_overstrike(const std::string& text) {
  if (text.find('\b') == std::string::npos) return text;
  // Replay each line on a virtual terminal: '\b' moves the cursor one cell left and the next
  // character overwrites that cell. A cell holds one (possibly multi-byte UTF-8) character.
  std::string out;
  std::vector<std::string> cells;
  std::size_t cursor = 0;
  auto flush = [&] {
    for (const auto& c : cells) out += c;
    cells.clear();
    cursor = 0;
  };
  for (const char c : text) {
    if (c == '\n') {
      flush();
      out += '\n';
    } else if (c == '\b') {
      if (cursor > 0) --cursor;
    } else if (is_utf8_continuation(c) && cursor > 0) {
      cells[cursor - 1] += c;  // completes the character just written
    } else if (cursor < cells.size()) {
      cells[cursor++] = std::string(1, c);
    } else {
      cells.emplace_back(1, c);
      ++cursor;
    }
  }
  flush();
  return out;
}

PrepareTextStats prepare_text(const PrepareTextOptions& options) {
  if (options.val_every < 2) {
    throw InputError("prepare-text: val_every must be at least 2 (got " + std::to_string(options.val_every) +
                     ")");
  }
  if (options.name.empty() || options.name.find('/') != std::string::npos) {
    throw InputError("prepare-text: output name " + json_string(options.name) +
                     " must be a plain file prefix");
  }

  PrepareTextStats stats;
  std::vector<fs::path> inputs = options.inputs;
  if (inputs.empty()) inputs.emplace_back(kFortunesDir);
  for (const auto& in : inputs) {
    std::error_code ec;
    if (fs::is_directory(in, ec)) {
      for (auto& f : text_files_in(in)) stats.sources.push_back(std::move(f));
    } else if (fs::exists(in, ec)) {
      stats.sources.push_back(in);  // read_file refuses a FIFO or device, naming it
    } else if (options.inputs.empty()) {
      throw InputError("prepare-text: the default corpus " + tee::quoted_path(in) +
                       " is missing; install Debian's `fortunes` package or pass text files");
    } else {
      throw InputError("prepare-text: input " + tee::quoted_path(in) +
                       " not found (pass text files or directories)");
    }
  }

  std::vector<uint16_t> train;  // (train_tokens) byte tokens
  std::vector<uint16_t> val;    // (val_tokens)
  std::vector<fs::path> used;
  for (const auto& path : stats.sources) {
    const std::string text = read_file(path);
    // Binary files (fortune's .dat indexes under another name, images) would poison a text model.
    if (text.find('\0') != std::string::npos) {
      if (std::find(options.inputs.begin(), options.inputs.end(), path) != options.inputs.end()) {
        throw InputError("prepare-text: " + tee::quoted_path(path) +
                         " contains NUL bytes; it is not a text file");
      }
      continue;
    }
    used.push_back(path);
    for (const auto& raw : split_documents(text)) {
      const std::string doc = resolve_overstrike(raw) + "%\n";
      ++stats.documents;
      const bool to_val = stats.documents % static_cast<uint64_t>(options.val_every) == 0;
      auto& dst = to_val ? val : train;
      (to_val ? stats.val_documents : stats.train_documents) += 1;
      for (const char c : doc) dst.push_back(static_cast<unsigned char>(c));
    }
  }
  stats.sources = std::move(used);
  if (train.empty()) {
    std::string where =
        inputs.size() == 1 ? tee::quoted_path(inputs[0]) : std::to_string(inputs.size()) + " inputs";
    throw InputError("prepare-text: no text found in " + where + "; pass text files or directories");
  }
  stats.train_tokens = train.size();
  stats.val_tokens = val.size();

  std::error_code ec;
  fs::create_directories(options.out_dir, ec);
  if (ec)
    throw RunError("prepare-text: cannot create " + tee::quoted_path(options.out_dir) + ": " + ec.message());
  stats.train_path = options.out_dir / (options.name + "_train.bin");
  stats.val_path = options.out_dir / (options.name + "_val.bin");
  stats.manifest_path = options.out_dir / (options.name + "_manifest.json");
  write_token_shard(stats.train_path, train, kByteVocab);
  write_token_shard(stats.val_path, val, kByteVocab);
  write_text_atomically(stats.manifest_path, manifest_json(options, stats));
  return stats;
}

}  // namespace tt
