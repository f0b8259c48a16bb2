#include "engine/checkpoint/sealed_codec.h"

#include "base/error.h"

namespace tt {
namespace fs = std::filesystem;

namespace {

class SealedCodec final : public FileCodec {
 public:
  SealedCodec(const tee::CheckpointKey& key, tee::Cipher cipher, std::uint32_t chunk_size)
      : key_(key.clone()), cipher_(cipher), chunk_size_(chunk_size) {
    if (key_.empty()) throw InputError("sealed checkpoints need a key (--key-file FILE)");
  }

  std::string suffix() const override { return kSealedCodecSuffix; }

  void write(const fs::path& path, std::span<const std::byte> bytes, const std::string& kind,
             std::optional<long> step) override {
    tee::SealOptions opts;
    opts.cipher = cipher_;
    opts.chunk_size = chunk_size_;
    // kind and name are plain identifiers we choose (model, optimizer, state / fixed file names).
    opts.metadata = "{\"kind\":\"" + kind + "\",\"name\":\"" + path.filename().string() + "\"" +
                    (step ? ",\"step\":" + std::to_string(*step) : std::string()) + "}";
    const tee::ByteView view(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
    tee::write_sealed_file(path, key_, view, opts);  // temp file + fsync + rename + directory fsync
  }

  const tee::CheckpointKey* key() const override { return &key_; }

 private:
  tee::CheckpointKey key_;
  tee::Cipher cipher_;
  std::uint32_t chunk_size_;
};

}  // namespace

std::unique_ptr<FileCodec> make_sealed_codec(const tee::CheckpointKey& checkpoint_key, tee::Cipher cipher,
                                             std::uint32_t chunk_size) {
  return std::make_unique<SealedCodec>(checkpoint_key, cipher, chunk_size);
}

}  // namespace tt
