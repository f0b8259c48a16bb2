// `teetrain keygen` and `teetrain seal-data`: the data owner's side of TEE mode. A master key file
// (32 random bytes, mode 0600) seals datasets and checkpoints through purpose keys derived by HKDF;
// a rank receives the dataset key only after attestation.
#include <cstdio>
#include <filesystem>

#include "base/error.h"
#include "base/warning.h"
#include "data/image_dataset.h"
#include "data/sealed_images.h"
#include "data/sealed_tokens.h"
#include "engine/keys/key_file.h"
#include "tee/crypto/aead.h"
#include "tools/cli/commands.h"
#include "tools/cli/validators.h"

namespace tt::cli {
namespace {

struct KeygenOptions {
  std::string out = "data-cache/teetrain.key";
  bool force = false;
};

struct SealDataOptions {
  std::string data = "data-cache/fortunes";
  std::string images;  // --images: seal an image dataset (both splits) instead of token shards
  std::string name;    // output prefix for --images (default: derived from the spec)
  std::string out = "data-cache/sealed";
  std::string key_file = "data-cache/teetrain.key";
  tee::Cipher cipher = tee::Cipher::Aes256Gcm;
  // 0 = per kind: 64 KiB for token shards (a random window opens little more than itself), 4 KiB
  // for images (kImageSealChunkSize: one chunk opened per shuffled image).
  uint32_t chunk_kb = 0;
};

// "fashion-mnist" -> "fashion-mnist"; "data/cifar-10-batches-bin/" -> "cifar-10-batches-bin".
std::string image_set_name(const std::string& spec) {
  std::filesystem::path p(spec);
  if (p.filename().empty()) p = p.parent_path();
  const std::string n = p.filename().string();
  return n.empty() || n == "." || n == ".." ? "images" : n;
}

// The dataset binding every sealed file carries (data/dataset_binding.h): the data owner may record
// the manifest digest to recognize the dataset later.
void print_binding(const DatasetBinding& b) {
  std::printf("sealed dataset %s (manifest sha256 %s):", b.dataset.c_str(), b.manifest.c_str());
  for (const auto& [split, files] : b.splits)
    std::printf(" %s %llu file(s)", split.c_str(), static_cast<unsigned long long>(files));
  std::printf("\n");
}

void seal_images(const SealDataOptions& o, const tee::DatasetKey& dataset_key) {
  const uint32_t chunk = o.chunk_kb > 0 ? o.chunk_kb * 1024 : kImageSealChunkSize;
  const std::string name = o.name.empty() ? image_set_name(o.images) : o.name;
  const ImageSet train = open_image_dataset(o.images, "train");
  const ImageSet test = open_image_dataset(o.images, "test");
  // Both splits are one sealed dataset, bound together (and normalized with the training statistics).
  const SealedImageDataset sealed =
      seal_image_dataset(train, test, o.out, name, dataset_key, o.cipher, chunk);
  for (const auto* s : {&train, &test}) {
    const SealedImageInfo& i = s == &train ? sealed.train : sealed.test;
    std::printf("sealed %s -> %s (%zu images %dx%dx%d, %u-byte chunks)\n", s->source.c_str(), i.file.c_str(),
                s->size(), s->C, s->H, s->W, chunk);
  }
  print_binding(sealed.binding);
  std::printf("train on it with: teetrain train --tee fast --key-file %s --data %s/%s\n", o.key_file.c_str(),
              o.out.c_str(), name.c_str());
}

void run_seal_data(const SealDataOptions& o) {
  if (!o.name.empty() && o.images.empty()) throw InputError("--name applies to --images only");
  if (o.chunk_kb > (1u << 16))
    throw InputError("--chunk-kb " + std::to_string(o.chunk_kb) + ": at most 65536 (64 MiB)");
  const tee::MasterKey master = load_key_file(o.key_file, print_warning, KeyUse::SealNew);
  if (!o.images.empty()) {
    seal_images(o, derive_dataset_key(master));
    return;
  }
  const uint32_t chunk = (o.chunk_kb > 0 ? o.chunk_kb : 64) * 1024;
  const auto inputs = list_token_shards(o.data);
  const auto infos = seal_token_shards(inputs, o.out, derive_dataset_key(master), o.cipher, chunk);
  for (const auto& i : infos) {
    std::printf("sealed %s -> %s (%llu tokens, %llu chunks)\n", i.input.c_str(), i.output.c_str(),
                static_cast<unsigned long long>(i.tokens), static_cast<unsigned long long>(i.chunks));
  }
  if (!infos.empty()) print_binding(infos.front().binding);
  std::printf("train on it with: teetrain train --tee fast --key-file %s --data %s/<name>\n",
              o.key_file.c_str(), o.out.c_str());
}

}  // namespace

void register_keys(CLI::App& app) {
  auto k = std::make_shared<KeygenOptions>();
  auto* kg = app.add_subcommand(
      "keygen", "Create a master key file for sealed datasets and checkpoints (32 bytes, 0600)");
  kg->add_option("--out", k->out, "Key file to create")->capture_default_str();
  kg->add_flag("--force", k->force,
               "Overwrite an existing key file (everything sealed with it becomes unreadable)");
  kg->callback([k] {
    const std::string fp = create_key_file(k->out, k->force);
    const tee::MasterKey master = load_key_file(k->out, print_warning);
    std::printf(
        "created %s (fingerprint %s; dataset key %s, checkpoint key %s). Keep it secret; it is never "
        "printed.\n",
        k->out.c_str(), fp.c_str(), derive_dataset_key(master).fingerprint().c_str(),
        derive_checkpoint_key(master).fingerprint().c_str());
  });

  auto s = std::make_shared<SealDataOptions>();
  auto* sd = app.add_subcommand("seal-data",
                                "Seal token shards, or an image dataset (--images), at rest (sealed-file "
                                "format) for TEE-mode training");
  sd->footer(
      "Token shards: each <name>_<split>[_NNN].bin becomes <out>/<name>_<split>[_NNN].bin.sealed.\n"
      "Images: --images fashion-mnist|<idx dir>|<CIFAR-10 dir> seals both splits into\n"
      "  <out>/<name>_train.images.sealed and <out>/<name>_test.images.sealed (records of 1 label byte +\n"
      "  C*H*W pixels; the clear, authenticated metadata holds the shape and the training split's "
      "mean/std);\n"
      "  train with --data <out>/<name> --tee cc|fast.\n"
      "Both are sealed under the dataset key derived from --key-file. One run seals one dataset: every\n"
      "  file's authenticated metadata binds a fresh dataset id, its split, shard index and count, and the\n"
      "  digest of the run's manifest, so training refuses renamed, missing, duplicated or foreign files.");
  auto* data_opt = sd->add_option("--data", s->data,
                                  "Token shards to seal: a prefix, directory, file or glob (all splits)")
                       ->capture_default_str();
  sd->add_option(
        "--images", s->images,
        "Seal an image dataset instead (both splits): fashion-mnist, an MNIST-layout idx directory or a "
        "CIFAR-10 directory")
      ->excludes(data_opt);
  sd->add_option("--name", s->name,
                 "Output prefix for --images (default: the dataset's name, e.g. fashion-mnist)");
  sd->add_option("--out", s->out, "Output directory")->capture_default_str();
  sd->add_option("--key-file", s->key_file, "Master key file (create with `teetrain keygen`)")
      ->capture_default_str();
  add_enum_option(sd, "--cipher", s->cipher, "AEAD cipher");
  sd->add_option("--chunk-kb", s->chunk_kb,
                 "Sealed chunk size in KiB, at most 65536 (0 = 64 for token shards, 4 for images)")
      ->check(non_negative())
      ->capture_default_str();
  sd->callback([s] { run_seal_data(*s); });
}

}  // namespace tt::cli
