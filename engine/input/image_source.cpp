#include "engine/input/image_source.h"

#include <utility>

#include "base/error.h"
#include "tee/errors.h"

namespace tt {
namespace {

void check_square(const std::string& data, int H, int W) {
  // The model is one square input shape.
  if (H != W) {
    throw InputError("--data " + data + ": images are " + std::to_string(H) + "x" + std::to_string(W) +
                     "; the resnet models take square images");
  }
}

// Shape, classes, size, split and normalization: everything the run relies on.
bool same_info(const SealedImageInfo& a, const SealedImageInfo& b) {
  return a.split == b.split && a.images == b.images && a.C == b.C && a.H == b.H && a.W == b.W &&
         a.classes == b.classes && a.mean == b.mean && a.std == b.std;
}

// Reads the training split's clear metadata (no key yet: not authentic until open_sealed()) to size
// the model, and finds the test split, which open_sealed() checks against it once authenticated.
void plan_sealed(ImageSource& s, const ImageSourceOptions& o, const std::filesystem::path& train_file) {
  if (!o.tee) {
    throw InputError("--data " + o.data + " holds sealed image sets; they open only in TEE mode " +
                     "(--tee cc|fast with --key-file), or give the plain dataset");
  }
  const auto test_file = find_sealed_images(o.data, "test");
  if (!test_file) {
    throw InputError("--data " + o.data + ": no sealed test split next to " + train_file.string() +
                     "; re-run `teetrain seal-data --images ...`, which seals both splits");
  }
  const SealedImageInfo tr = read_sealed_image_info(train_file);
  check_square(o.data, tr.H, tr.W);
  s.channels = tr.C;
  s.image_size = tr.H;
  s.classes = tr.classes;
  s.describe = tr.describe();
  s.sealed_train_info = tr;
  s.sealed_test_file = *test_file;
}

}  // namespace

void refuse_plain_images(const std::string& data) {
  throw InputError("--data " + data +
                   ": plain images refused in TEE mode; seal them with `teetrain seal-data " + "--images " +
                   data + " --out DIR` and pass --data DIR/<name>, or pass --allow-plain-data");
}

ImageSource open_image_source(const ImageSourceOptions& o, ImageSetCache* cache) {
  ImageSource s;
  s.options = o;
  if (const auto sealed_train = find_sealed_images(o.data, "train")) {
    plan_sealed(s, o, *sealed_train);
    return s;
  }
  if (o.tee && !o.allow_plain_data) refuse_plain_images(o.data);
  s.train_set = open_decoded_images(cache, o.data, "train");
  s.test_set = open_decoded_images(cache, o.data, "test");
  const ImageSet& tr = s.train_set->set();
  const ImageSet& te = s.test_set->set();
  check_square(o.data, tr.H, tr.W);
  if (te.C != tr.C || te.H != tr.H || te.W != tr.W || te.classes != tr.classes) {
    throw InputError("--data " + o.data + ": the test split's images (" + te.describe() +
                     ") differ in shape from the training split's (" + tr.describe() + ")");
  }
  // Evaluation must normalize exactly as training did, so both use the training split's statistics.
  const ImageTransform& plain = s.train_set->standard();
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

void ImageSource::open_sealed(const tee::DatasetKey& dataset_key, const IngressOptions& ingress,
                              Profiler* profiler) {
  if (!sealed()) throw InputError("--data " + options.data + ": not sealed image data");
  // Each file must hold the split it is opened as (a swapped or renamed split is refused), and both
  // must come from one seal-data run (checked once both are authenticated).
  sealed_train = std::make_unique<SealedImageSet>(sealed_train_info->file, "train", dataset_key, profiler);
  sealed_test = std::make_unique<SealedImageSet>(sealed_test_file, "test", dataset_key, profiler);
  check_same_dataset({sealed_train->info().file, sealed_train->binding()},
                     {sealed_test->info().file, sealed_test->binding()});
  // The model was sized (and agreed across ranks) from metadata read before the key was released;
  // now that it is authenticated, it must be what was read then.
  const SealedImageInfo& tr = sealed_train->info();
  const SealedImageInfo& te = sealed_test->info();
  if (!same_info(tr, *sealed_train_info)) {
    throw IntegrityError("sealed image set " + tr.file.string() +
                         " changed since its metadata was first read (" + sealed_train_info->describe() +
                         " -> " + tr.describe() + ")");
  }
  if (te.C != tr.C || te.H != tr.H || te.W != tr.W || te.classes != tr.classes || te.mean != tr.mean ||
      te.std != tr.std) {
    throw InputError("--data " + options.data + ": the sealed test split (" + te.describe() +
                     ") does not match the training split (" + tr.describe() +
                     "); seal both with one seal-data run");
  }
  // Normalization: the training split's statistics recorded at sealing time, as a plain run computes them.
  const ImageTransform plain = sealed_train_info->transform();
  ImageTransform aug = plain;
  aug.random_crop = options.augment;
  aug.hflip = options.augment;
  sealed_train_loader =
      std::make_unique<SealedImageLoader>(*sealed_train, aug, options.seed, true, ingress, profiler);
  sealed_test_loader =
      std::make_unique<SealedImageLoader>(*sealed_test, plain, options.seed, false, ingress, profiler);
  train = [&l = *sealed_train_loader](Batch& b, uint64_t g, int n) { l.fill(b, g, n); };
  val = [&l = *sealed_test_loader](Batch& b, uint64_t g, int n) { l.fill(b, g, n); };
  describe = tr.describe() + (options.augment ? " + crop/flip" : "") + "; val: " + te.describe() +
             (ingress.mode == IngressMode::Direct ? ", direct ingress" : ", bounce ingress") + "; manifest " +
             sealed_train->binding().manifest;  // identifies the sealed dataset
}

uint64_t ImageSource::test_size() const {
  if (sealed()) return sealed_test ? sealed_test->size() : 0;
  return test_set->set().size();
}

std::string ImageSource::test_source() const {
  if (sealed()) return sealed_test ? sealed_test->info().source : sealed_test_file.string();
  return test_set->set().source;
}

void ImageSource::check_model(int model_channels, int model_size, int model_classes) const {
  if (sealed()) {  // the test split is checked against the training split when opened
    const SealedImageInfo& i = *sealed_train_info;
    check_image_shape(i.source + " (" + i.file.string() + ")", i.C, i.H, i.W, i.classes, model_channels,
                      model_size, model_size, model_classes);
    return;
  }
  train_loader->check_shape(model_channels, model_size, model_size, model_classes);
  test_loader->check_shape(model_channels, model_size, model_size, model_classes);
}

}  // namespace tt
