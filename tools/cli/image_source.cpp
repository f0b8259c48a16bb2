#include "tools/cli/image_source.h"

#include <utility>

#include "engine/core/error.h"

namespace tt::cli {

ImageSource open_image_source(const ImageSourceOptions& o) {
  if (o.tee && !o.allow_plain_data) {
    throw InputError("--data " + o.data +
                     ": TEE mode has no sealed image shards yet; pass --allow-plain-data " +
                     "to train on plaintext images (or use --tee off)");
  }
  ImageSource s;
  s.train_set = std::make_unique<ImageSet>(open_image_dataset(o.data, "train"));
  s.test_set = std::make_unique<ImageSet>(open_image_dataset(o.data, "test"));
  const ImageSet& tr = *s.train_set;
  const ImageSet& te = *s.test_set;
  // The model is one square input shape: both splits must share it.
  if (tr.H != tr.W) {
    throw InputError("--data " + o.data + ": images are " + std::to_string(tr.H) + "x" +
                     std::to_string(tr.W) + "; the resnet models take square images");
  }
  if (te.C != tr.C || te.H != tr.H || te.W != tr.W || te.classes != tr.classes) {
    throw InputError("--data " + o.data + ": the test split's images (" + te.describe() +
                     ") differ in shape from the training split's (" + tr.describe() + ")");
  }
  // Evaluation must normalize exactly as training did, so both use the training split's statistics.
  const ImageTransform plain = ImageTransform::standard(tr);
  ImageTransform aug = plain;
  aug.random_crop = o.augment;
  aug.hflip = o.augment;
  s.train_loader = std::make_unique<ImageLoader>(tr, aug, o.seed, true);
  s.test_loader = std::make_unique<ImageLoader>(te, plain, o.seed, false);
  s.train = [&l = *s.train_loader](Batch& b, uint64_t g, int n) { l.fill(b, g, n); };
  s.val = [&l = *s.test_loader](Batch& b, uint64_t g, int n) { l.fill(b, g, n); };
  s.channels = tr.C;
  s.image_size = tr.H;
  s.classes = tr.classes;
  s.describe = tr.describe() + (o.augment ? " + crop/flip" : "") + "; val: " + te.describe();
  return s;
}

void ImageSource::check_model(int model_channels, int model_size, int model_classes) const {
  train_loader->check_shape(model_channels, model_size, model_size, model_classes);
  test_loader->check_shape(model_channels, model_size, model_size, model_classes);
}

}  // namespace tt::cli
