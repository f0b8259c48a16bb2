// `teetrain eval`: test loss and accuracy of a saved image classifier over a dataset's whole test
// split, in evaluation mode (batch norm with the checkpoint's running statistics).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "base/error.h"
#include "core/backend_factory.h"
#include "engine/checkpoint/checkpoint.h"
#include "engine/checkpoint/sealed_codec.h"
#include "engine/input/image_source.h"
#include "engine/keys/key_file.h"
#include "tools/cli/commands.h"
#include "tools/cli/json_file.h"
#include "tools/cli/model_flags.h"
#include "tools/cli/validators.h"

namespace tt::cli {
namespace {

struct EvalOptions {
  std::string ckpt;
  std::string key_file;  // for sealed (TEE-mode) checkpoints
  std::string data = "fashion-mnist";
  int batch = 256;
  int threads = 0;
  DeviceKind device = DeviceKind::Cpu;
  std::string json;  // optional result file
};

void run_eval(const EvalOptions& o) {
  const auto dir = CheckpointStore::resolve(o.ckpt, "--ckpt");
  // --key-file may serve the checkpoint (sealed in TEE mode), the test split (sealed images), or both:
  // the checkpoint's own files say whether it is sealed.
  std::unique_ptr<FileCodec> codec = make_plain_codec();
  std::error_code ec;
  const bool sealed_ckpt = std::filesystem::exists(dir / "state.json.sealed", ec);
  if (sealed_ckpt && o.key_file.empty()) {
    throw InputError("--ckpt " + dir.string() + " is sealed (a TEE-mode run): give --key-file");
  }
  if (sealed_ckpt) {
    codec = make_sealed_codec(derive_checkpoint_key(load_key_file(o.key_file)));
  }
  const CheckpointMeta meta = CheckpointStore::read_meta(dir, *codec);
  const ModelOptions mo = model_options_from_checkpoint(meta.config, dir.string());
  if (!is_image_model(mo)) {
    throw InputError("eval: the checkpoint holds " + mo.name +
                     ", not an image classifier; eval takes resnet checkpoints");
  }
  // The seed only orders the (unused) training stream; the test split is read in file order.
  // Sealed image sets (seal-data --images) open with the dataset key derived from --key-file.
  ImageSource img =
      open_image_source({o.data, meta.seed, false, /*tee=*/!o.key_file.empty(), /*allow_plain=*/true},
                        /*cache=*/nullptr);
  if (img.sealed()) {
    if (o.key_file.empty()) throw InputError("--data " + o.data + " is sealed: give --key-file");
    img.open_sealed(derive_dataset_key(load_key_file(o.key_file)), {}, nullptr);
  }
  img.check_model(mo.image_channels, mo.image_size, mo.num_classes);

  std::unique_ptr<Backend> backend = make_backend(backend_options(o.device, o.threads > 0 ? o.threads : 2));
  std::unique_ptr<Model> model = make_model(*backend, mo);
  CheckpointStore::load(dir, *codec, *backend, *model, nullptr);
  model->set_training(false);
  const auto n = img.test_size();
  model->reserve(static_cast<int>(std::min<uint64_t>(n, static_cast<uint64_t>(o.batch))), 0);
  Batch b;
  double loss_sum = 0;
  long correct = 0;
  for (uint64_t g = 0; g < n; g += static_cast<uint64_t>(o.batch)) {
    img.val(b, g, static_cast<int>(std::min<uint64_t>(static_cast<uint64_t>(o.batch), n - g)));
    const EvalResult e = model->evaluate(b);
    loss_sum += e.loss_sum;
    correct += e.correct;
  }
  const double loss = loss_sum / static_cast<double>(n);
  const double acc = static_cast<double>(correct) / static_cast<double>(n);
  std::printf("eval: %s step %ld on %s: %llu images, loss %.4f, accuracy %.2f%% (%ld correct)\n",
              mo.name.c_str(), meta.step, img.test_source().c_str(), static_cast<unsigned long long>(n), loss,
              100.0 * acc, correct);
  if (!o.json.empty()) {
    const nlohmann::json j = {
        {"model", mo.name}, {"step", meta.step}, {"data", img.test_source()}, {"images", n},
        {"loss", loss},     {"accuracy", acc},   {"correct", correct},        {"checkpoint", dir.string()}};
    write_json_file("--json", o.json, j);
  }
}

}  // namespace

void register_eval(CLI::App& app) {
  auto o = std::make_shared<EvalOptions>();
  auto* cmd =
      app.add_subcommand("eval", "Test loss and accuracy of a saved image model over a dataset's test split");
  cmd->add_option("--ckpt", o->ckpt, "Checkpoint: a step directory or a --ckpt-dir (newest is used)")
      ->required();
  cmd->add_option(
      "--key-file", o->key_file,
      "Master key file, for a sealed (TEE-mode) checkpoint and/or a sealed test split (seal-data --images)");
  cmd->add_option("--data", o->data,
                  "Images: fashion-mnist, an MNIST-layout idx directory or a CIFAR-10 directory")
      ->capture_default_str();
  cmd->add_option("--batch", o->batch, "Images per forward pass")->check(positive())->capture_default_str();
  cmd->add_option("--threads", o->threads, "Compute threads (0 = 2)")->check(non_negative());
  add_enum_option(cmd, "--device", o->device, "Where the model runs");
  cmd->add_option("--json", o->json, "Also write the result as JSON to this file");
  cmd->callback([o] { run_eval(*o); });
}

}  // namespace tt::cli
