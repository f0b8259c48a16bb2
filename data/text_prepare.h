// `teetrain prepare-text`: text files -> byte-level (vocabulary 256) train/val token shards.
//
// Documents: a text file is cut into documents at lines that are exactly "%" (the fortune(6) file
// format); a file without such lines is one document. Each document is cleaned (terminal overstrike
// "X\bY" sequences, used for underlining in some fortunes, are resolved to what a terminal shows)
// and written as its bytes followed by the separator line "%\n", so a model learns where documents
// end and sampled text reads like a fortune file.
//
// Split: documents are numbered across all inputs in order (files sorted by name); every
// `val_every`-th document (the 20th, 40th, ...) goes to validation, the rest to training. This is
// deterministic and spreads validation over every file rather than holding out one topic.
//
// Outputs in out_dir: <name>_train.bin, <name>_val.bin (token shards, vocab 256) and
// <name>_manifest.json (sources, counts, vocabulary, split rule). Each is written to a temporary
// file and renamed, so re-running overwrites atomically and a reader never sees half a file.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace tt {

inline constexpr const char* kFortunesDir = "/usr/share/games/fortunes";

struct PrepareTextOptions {
  // Files and/or directories. Empty: the Debian `fortunes` corpus (kFortunesDir). A directory
  // contributes its regular, non-hidden text files (not recursively), skipping fortune's *.dat
  // index files, *.u8 duplicates, symlinks and files containing NUL bytes. Files named explicitly
  // are always read.
  std::vector<std::filesystem::path> inputs;
  std::filesystem::path out_dir = "data-cache";  // created if missing (git-ignored at the repo root)
  std::string name = "fortunes";                 // output file prefix
  int val_every = 20;                            // every val_every-th document goes to val (>= 2)
};

struct PrepareTextStats {
  std::vector<std::filesystem::path> sources;  // the text files read, in order
  uint64_t documents = 0;
  uint64_t train_documents = 0;
  uint64_t val_documents = 0;
  uint64_t train_tokens = 0;  // = bytes
  uint64_t val_tokens = 0;
  std::filesystem::path train_path;
  std::filesystem::path val_path;
  std::filesystem::path manifest_path;
};

// Throws InputError if an input is missing, no text is found, or the options are nonsense;
// RunError on an I/O failure while writing.
PrepareTextStats prepare_text(const PrepareTextOptions& options);

// Exposed for tests: resolves terminal backspace overstrikes in one document ("_\bA" -> "A",
// "___\b\b\bfoo" -> "foo"), treating a UTF-8 sequence as one character cell.
std::string resolve_overstrike(const std::string& text);

}  // namespace tt
