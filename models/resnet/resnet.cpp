// Resnet: configuration and presets, the layout (parameter table, conv/bn units), initialisation,
// activation arenas and accounting. The passes are in resnet_forward.cpp and resnet_backward.cpp.
#include "models/resnet/resnet.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "core/rng.h"
#include "models/common/model_layout.h"

namespace tt {

namespace {

// Builds the parameter and state tables while the layout is walked in forward order.
class TableBuilder {
 public:
  explicit TableBuilder(ResnetLayout& lay) : lay_(lay) {}
  std::size_t param(const std::string& name, std::vector<int64_t> shape, bool decay) {
    lay_.params.push_back(make_param_info(name, std::move(shape), lay_.num_params, decay));
    lay_.num_params += lay_.params.back().numel;
    return lay_.params.back().offset;
  }
  std::size_t buffer(const std::string& name, int64_t n) {
    lay_.buffers.push_back(make_param_info(name, {n}, lay_.num_buffers, false));
    lay_.num_buffers += lay_.buffers.back().numel;
    return lay_.buffers.back().offset;
  }
  // conv `cname` (no bias) + bn `bname` mapping (IC, H, W) -> (OC, OH, OW).
  ResnetConvBn conv_bn(const std::string& cname, const std::string& bname, int IC, int H, int W, int OC,
                       int k, int stride, int pad) {
    ResnetConvBn u;
    u.conv = Conv2dShape{0, IC, H, W, OC, k, k, stride, pad};
    u.w = param(cname + ".weight", {OC, IC, k, k}, true);
    u.bn_w = param(bname + ".weight", {OC}, false);
    u.bn_b = param(bname + ".bias", {OC}, false);
    u.run_mean = buffer(bname + ".running_mean", OC);
    u.run_var = buffer(bname + ".running_var", OC);
    lay_.max_act = std::max(lay_.max_act, u.out_numel());
    return u;
  }

 private:
  ResnetLayout& lay_;
};

std::string join(const std::vector<int>& v) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i > 0) s.push_back(',');
    s.append(std::to_string(v[i]));
  }
  return s;
}

}  // namespace

// ---- config -----------------------------------------------------------------------------------------

bool ResnetConfig::small_stem() const {
  return stem == ResnetStem::Small || (stem == ResnetStem::Auto && image_size <= 64);
}

int ResnetConfig::feature_channels() const {
  return width * (1 << (static_cast<int>(layers.size()) - 1)) * expansion();
}

void ResnetConfig::validate() const {
  auto bad = [](const std::string& what) { throw InputError("resnet: " + what); };
  if (layers.empty() || layers.size() > 6) bad("need 1 to 6 stages, got " + std::to_string(layers.size()));
  for (int n : layers) {
    if (n < 1) bad("every stage needs at least one block (layers " + join(layers) + ")");
  }
  if (width < 1 || in_channels < 1 || num_classes < 1 || image_size < 1) {
    bad("width, channels, classes and image size must be positive (width " + std::to_string(width) +
        ", channels " + std::to_string(in_channels) + ", classes " + std::to_string(num_classes) +
        ", image " + std::to_string(image_size) + ")");
  }
  // The ImageNet stem's 7x7 conv needs H + 6 >= 7; the rest of the network keeps every size >= 1.
  if (image_size > 4096) bad("image size " + std::to_string(image_size) + " is too large");
}

std::size_t ResnetConfig::num_params() const {
  validate();
  return ResnetLayout::build(*this).num_params;
}

// Stages are contiguous in the parameter buffer: a stage runs from its first block's first parameter to
// the next stage's (the classifier's after the last).
std::size_t ResnetConfig::max_stage_params() const {
  validate();
  const ResnetLayout lay = ResnetLayout::build(*this);
  std::size_t largest = 0, first = 0;  // first: the stage's first block
  for (const int n : layers) {
    const std::size_t begin = lay.blocks[first].first_param;
    first += static_cast<std::size_t>(n);
    const std::size_t end = first < lay.blocks.size() ? lay.blocks[first].first_param : lay.fc_w;
    largest = std::max(largest, end - begin);
  }
  return largest;
}

std::size_t ResnetConfig::num_buffers() const {
  validate();
  return ResnetLayout::build(*this).num_buffers;
}

std::string ResnetConfig::describe() const {
  return std::string(block == ResnetBlock::Basic ? "basic" : "bottleneck") + " [" + join(layers) +
         "] w=" + std::to_string(width) + " " + std::to_string(in_channels) + "x" +
         std::to_string(image_size) + "x" + std::to_string(image_size) + " -> " +
         std::to_string(num_classes) + (small_stem() ? ", small stem" : ", imagenet stem");
}

std::vector<ResnetPreset> ResnetConfig::presets() {
  auto mk = [](ResnetBlock b, std::vector<int> layers, int width, int ch, int size, int classes) {
    ResnetConfig c;
    c.block = b;
    c.layers = std::move(layers);
    c.width = width;
    c.in_channels = ch;
    c.image_size = size;
    c.num_classes = classes;
    return c;
  };
  using enum ResnetBlock;
  return {
      {"resnet-tiny", mk(Basic, {1, 1}, 4, 3, 8, 5), "2 basic blocks, width 4, 3x8x8, 5 classes (tests)"},
      {"resnet-small", mk(Basic, {1, 1, 1}, 16, 1, 28, 10),
       "3 basic blocks, width 16, 1x28x28, 10 classes (Fashion-MNIST in minutes)"},
      {"resnet18", mk(Basic, {2, 2, 2, 2}, 64, 3, 224, 1000),
       "torchvision resnet18 (11.7M at 224x224, 1000)"},
      {"resnet50", mk(Bottleneck, {3, 4, 6, 3}, 64, 3, 224, 1000),
       "torchvision resnet50 (25.6M at 224x224, 1000)"},
      {"resnet152", mk(Bottleneck, {3, 8, 36, 3}, 64, 3, 224, 1000),
       "torchvision resnet152 (60.2M at 224x224, 1000)"},
  };
}

bool ResnetConfig::is_preset(const std::string& name) {
  for (const auto& p : presets()) {
    if (p.name == name) return true;
  }
  return false;
}

ResnetConfig ResnetConfig::preset(const std::string& name) {
  std::string names;
  for (const auto& p : presets()) {
    if (p.name == name) return p.config;
    names += (names.empty() ? "" : ", ") + p.name;
  }
  throw InputError("unknown resnet model '" + name + "'; valid names: " + names);
}

// ---- layout -----------------------------------------------------------------------------------------

ResnetLayout ResnetLayout::build(const ResnetConfig& cfg) {
  ResnetLayout lay;
  TableBuilder tb(lay);
  const int S = cfg.image_size;
  if (cfg.small_stem()) {
    lay.stem = tb.conv_bn("conv1", "bn1", cfg.in_channels, S, S, cfg.width, 3, 1, 1);
  } else {
    lay.stem = tb.conv_bn("conv1", "bn1", cfg.in_channels, S, S, cfg.width, 7, 2, 3);
    lay.maxpool = true;
  }
  int C = cfg.width;
  int H = lay.stem.conv.OH();
  int W = lay.stem.conv.OW();
  if (lay.maxpool) {
    lay.pool = Pool2dShape{0, C, H, W, 3, 2, 1};
    H = lay.pool.OH();
    W = lay.pool.OW();
    lay.max_act = std::max(lay.max_act, static_cast<std::size_t>(C) * H * W);
  }
  const int E = cfg.expansion();
  for (std::size_t s = 0; s < cfg.layers.size(); ++s) {
    const int planes = cfg.width << s;
    for (int b = 0; b < cfg.layers[s]; ++b) {
      const int stride = (s > 0 && b == 0) ? 2 : 1;
      const std::string p = "layer" + std::to_string(s + 1) + "." + std::to_string(b) + ".";
      ResnetBlockLayout blk;
      blk.first_param = lay.num_params;
      if (cfg.block == ResnetBlock::Basic) {
        blk.units.push_back(tb.conv_bn(p + "conv1", p + "bn1", C, H, W, planes, 3, stride, 1));
        const auto& u0 = blk.units.back().conv;
        blk.units.push_back(tb.conv_bn(p + "conv2", p + "bn2", planes, u0.OH(), u0.OW(), planes, 3, 1, 1));
      } else {
        blk.units.push_back(tb.conv_bn(p + "conv1", p + "bn1", C, H, W, planes, 1, 1, 0));
        blk.units.push_back(tb.conv_bn(p + "conv2", p + "bn2", planes, H, W, planes, 3, stride, 1));
        const auto& u1 = blk.units.back().conv;
        blk.units.push_back(
            tb.conv_bn(p + "conv3", p + "bn3", planes, u1.OH(), u1.OW(), planes * E, 1, 1, 0));
      }
      if (stride != 1 || C != planes * E) {
        blk.has_down = true;
        blk.down = tb.conv_bn(p + "downsample.0", p + "downsample.1", C, H, W, planes * E, 1, stride, 0);
      }
      const auto& last = blk.units.back().conv;
      C = planes * E;
      H = last.OH();
      W = last.OW();
      lay.blocks.push_back(std::move(blk));
    }
  }
  lay.feat_C = C;
  lay.feat_HW = H * W;
  lay.fc_w = tb.param("fc.weight", {cfg.num_classes, C}, true);
  lay.fc_b = tb.param("fc.bias", {cfg.num_classes}, false);
  return lay;
}

// ---- model ------------------------------------------------------------------------------------------

Resnet::Resnet(Backend& backend, ResnetConfig cfg, std::string name)
    : backend_(backend), cfg_(std::move(cfg)), name_(std::move(name)) {
  cfg_.validate();
  if (name_.empty()) name_ = "resnet(" + cfg_.describe() + ")";
  lay_ = ResnetLayout::build(cfg_);
  params_buf_ = DeviceBuffer(backend_, lay_.num_params * sizeof(float));
  grads_buf_ = DeviceBuffer(backend_, lay_.num_params * sizeof(float));
  buffers_buf_ = DeviceBuffer(backend_, lay_.num_buffers * sizeof(float));
}

const ParamInfo& Resnet::param(const std::string& pname) const {
  for (const ParamInfo& p : lay_.params) {
    if (p.name == pname) return p;
  }
  throw InputError("resnet: no parameter named '" + pname + "'");
}

void Resnet::init_params(uint64_t seed) {
  // torchvision: kaiming_normal_(mode="fan_out", nonlinearity="relu") for convs, i.e.
  // N(0, 2 / (OC*KH*KW)); bn weight 1, bias 0; fc keeps nn.Linear's default
  // U(-1/sqrt(in), 1/sqrt(in)) for weight and bias. One RNG stream per tensor (derived from the seed
  // and the tensor's index), so a shape change in one tensor leaves the others unchanged.
  std::vector<float> host(lay_.num_params, 0.0f);
  const double fc_bound = 1.0 / std::sqrt(static_cast<double>(lay_.feat_C));
  for (std::size_t i = 0; i < lay_.params.size(); ++i) {
    const ParamInfo& p = lay_.params[i];
    float* dst = host.data() + p.offset;
    Rng rng(derive_seed(seed, i));
    if (p.offset == lay_.fc_w || p.offset == lay_.fc_b) {
      for (std::size_t j = 0; j < p.numel; ++j)
        dst[j] = static_cast<float>((2.0 * rng.uniform() - 1.0) * fc_bound);
    } else if (p.shape.size() == 4) {
      const double fan_out = static_cast<double>(p.shape[0] * p.shape[2] * p.shape[3]);
      const double stddev = std::sqrt(2.0 / fan_out);
      for (std::size_t j = 0; j < p.numel; ++j) dst[j] = static_cast<float>(rng.normal() * stddev);
    } else {
      const bool gain = p.name.ends_with(".weight");  // bn weights
      std::fill(dst, dst + p.numel, gain ? 1.0f : 0.0f);
    }
  }
  backend_.copy_to_device(params_buf_.data(), host.data(), lay_.num_params * sizeof(float));
  std::vector<float> state(lay_.num_buffers, 0.0f);
  for (const ParamInfo& b : lay_.buffers) {
    if (b.name.ends_with("running_var")) std::fill_n(state.data() + b.offset, b.numel, 1.0f);
  }
  backend_.copy_to_device(buffers_buf_.data(), state.data(), lay_.num_buffers * sizeof(float));
  have_forward_ = false;
}

void Resnet::zero_grad() {
  backend_.fill(grads_buf_.as<float>(), 0.0f, lay_.num_params);
}

Resnet::ArenaSizes Resnet::carve(const ResnetConfig& cfg, ResnetLayout& lay, Views& v, float* acts,
                                 float* dacts, int32_t* ints, int B) {
  const auto nB = static_cast<std::size_t>(B);
  ArenaCarver<float> a(acts);
  ArenaCarver<float> g(dacts);
  ArenaCarver<int32_t> n(ints);
  auto unit = [&](ResnetConvBn& u, const float* in, bool own_out) {
    u.in = in;
    u.conv_out = a.take(nB * u.out_numel());
    u.mean = a.take(static_cast<std::size_t>(u.conv.OC));
    u.rstd = a.take(static_cast<std::size_t>(u.conv.OC));
    u.out = own_out ? a.take(nB * u.out_numel()) : nullptr;
  };
  const std::size_t classes = static_cast<std::size_t>(cfg.num_classes);
  v.images = a.take(nB * static_cast<std::size_t>(cfg.in_channels) *
                    static_cast<std::size_t>(cfg.image_size) * static_cast<std::size_t>(cfg.image_size));
  unit(lay.stem, v.images, true);
  const float* x = lay.stem.out;
  v.pooled = nullptr;
  v.argmax = nullptr;
  if (lay.maxpool) {
    const std::size_t pn = nB * static_cast<std::size_t>(lay.pool.C) *
                           static_cast<std::size_t>(lay.pool.OH()) * static_cast<std::size_t>(lay.pool.OW());
    v.pooled = a.take(pn);
    v.argmax = n.take(pn);
    x = v.pooled;
  }
  for (ResnetBlockLayout& blk : lay.blocks) {
    const float* block_in = x;
    for (ResnetConvBn& u : blk.units) {
      unit(u, x, true);
      x = u.out;
    }
    if (blk.has_down) unit(blk.down, block_in, false);
  }
  v.feats = a.take(nB * static_cast<std::size_t>(lay.feat_C));
  v.logits = a.take(nB * classes);
  v.probs = a.take(nB * classes);
  v.losses = a.take(nB);
  v.scratch = a.take(nB * lay.max_act);
  for (float*& d : v.dbuf) d = g.take(nB * lay.max_act);
  v.dlogits = g.take(nB * classes);
  v.dfeats = g.take(nB * static_cast<std::size_t>(lay.feat_C));
  v.labels = n.take(nB);
  return {a.used(), g.used(), n.used()};
}

void Resnet::reserve(int B, int /*T*/) {
  if (B <= 0) throw InputError("resnet: batch size must be positive, got " + std::to_string(B));
  if (static_cast<long long>(B) * static_cast<long long>(lay_.max_act) > (1LL << 31) - 1) {
    throw InputError("resnet: batch of " + std::to_string(B) + " images is too large for this model");
  }
  if (B > res_B_) {
    acts_buf_.reset();
    dacts_buf_.reset();
    ints_buf_.reset();
    const ArenaSizes sz = carve(cfg_, lay_, v_, nullptr, nullptr, nullptr, B);
    acts_buf_ = DeviceBuffer(backend_, sz.acts * sizeof(float));
    dacts_buf_ = DeviceBuffer(backend_, sz.dacts * sizeof(float));
    ints_buf_ = DeviceBuffer(backend_, sz.ints * sizeof(int32_t));
    carve(cfg_, lay_, v_, acts_buf_.as<float>(), dacts_buf_.as<float>(), ints_buf_.as<int32_t>(), B);
    res_B_ = B;
    have_forward_ = false;
  }
  reserve_workspace(B);
}

void Resnet::reserve_workspace(int B) {
  // One conv workspace for the largest need of any conv at this batch size. Checked for every batch
  // size, not only the largest: a backend may pick another algorithm for a smaller batch (oneDNN does,
  // by shape), and its need need not shrink with B. The sizes are cached by the backend per shape.
  std::size_t ws = 0;
  auto need = [&](const ResnetConvBn& u) {
    Conv2dShape s = u.conv;
    s.B = B;
    ws = std::max(ws, backend_.conv2d_workspace_floats(s));
  };
  need(lay_.stem);
  for (const ResnetBlockLayout& blk : lay_.blocks) {
    for (const ResnetConvBn& u : blk.units) need(u);
    if (blk.has_down) need(blk.down);
  }
  if (ws <= ws_floats_ && ws_buf_.as<float>() != nullptr) return;
  ws_buf_.reset();
  ws_buf_ = DeviceBuffer(backend_, ws * sizeof(float));
  ws_floats_ = ws;
}

StepFlops Resnet::flops_for(const ResnetConfig& cfg, int B) {
  // Convs and the classifier, 2 FLOPs per multiply-add; batch norm, ReLU and pooling are ignored.
  // Backward: input and weight gradients, 2x forward (the stem's input gradient is skipped, ignored).
  const ResnetLayout lay = ResnetLayout::build(cfg);
  double macs = 0;
  auto conv = [&macs](const ResnetConvBn& u) {
    macs += static_cast<double>(u.out_numel()) * u.conv.IC * u.conv.KH * u.conv.KW;
  };
  conv(lay.stem);
  for (const auto& blk : lay.blocks) {
    for (const auto& u : blk.units) conv(u);
    if (blk.has_down) conv(blk.down);
  }
  macs += static_cast<double>(lay.feat_C) * cfg.num_classes;
  StepFlops f;
  f.forward = 2.0 * macs * B;
  f.backward = 2.0 * f.forward;
  return f;
}

std::size_t Resnet::activation_bytes_for(const ResnetConfig& cfg, int B) {
  // The same carve() that reserve() uses, with null bases (sizes only). The conv workspace is the
  // backend's business and not counted.
  ResnetLayout lay = ResnetLayout::build(cfg);
  Views v;
  const ArenaSizes sz = carve(cfg, lay, v, nullptr, nullptr, nullptr, B);
  return (sz.acts + sz.dacts) * sizeof(float) + sz.ints * sizeof(int32_t);
}

}  // namespace tt
