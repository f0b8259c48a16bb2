// ResNet family (He et al. 2015, torchvision's layout): configuration, presets and the model, with
// explicit forward and backward passes over the backend interface (no autograd).
//
// Architecture. Stem, then stages of blocks, then global average pooling and a linear classifier:
//   ImageNet stem: conv1 7x7/2 (pad 3) + bn1 + ReLU + maxpool 3x3/2 (pad 1)          (torchvision)
//   small stem:    conv1 3x3/1 (pad 1) + bn1 + ReLU, no maxpool   (for 28x28 / 32x32 inputs)
//   stage i (i = 0..): layers[i] blocks of width w_i = width * 2^i, the first block of stages i > 0
//     has stride 2. Basic block: 3x3 conv, 3x3 conv (expansion 1). Bottleneck (torchvision v1.5,
//     stride on the 3x3): 1x1 conv, 3x3 conv, 1x1 conv to 4 w_i (expansion 4). A block whose input
//     and output shapes differ has a downsample branch: 1x1 conv (with the block's stride) + bn.
//     Every conv has no bias and is followed by batch norm (eps 1e-5, momentum 0.1); ReLU after
//     every bn except the block's last, which is added to the shortcut first and then ReLU'd.
//
// Parameters (one flat buffer, forward order, torchvision names and shapes):
//   conv1.weight, bn1.{weight,bias},
//   layer{s}.{b}.conv1.weight, .bn1.{weight,bias}, .conv2.weight, .bn2.{weight,bias},
//     [.conv3.weight, .bn3.{weight,bias}] (bottleneck), [.downsample.0.weight, .downsample.1.{weight,bias}],
//   fc.weight (classes, C), fc.bias (classes).
// With the ImageNet stem, 224x224 inputs and 1000 classes, the presets resnet18/50/152 have exactly
// torchvision's parameter counts (11,689,512 / 25,557,032 / 60,192,808).
// ParamInfo.decay: conv and linear weights true; batch-norm weights/biases and the fc bias false.
//
// Batch-norm running statistics are state, not parameters: they live in a separate flat buffer
// (state_data(), num_state_floats()) described by state_buffers() -- "bn1.running_mean",
// "layer1.0.bn1.running_var", ... in forward order -- so checkpoints can save and restore them. They are
// never reduced across ranks and have no gradient. (PyTorch's num_batches_tracked is not kept: it only
// matters for momentum=None.)
//
// Data parallelism: like PyTorch DDP WITHOUT SyncBatchNorm. In training mode each rank normalizes with
// the statistics of its own local batch (B per rank, not the global batch), so results depend on the
// per-rank batch size, and each rank's running statistics are an average of its own batches only.
// PyTorch DDP (broadcast_buffers=True) copies rank 0's buffers to the other ranks before each forward;
// the equivalent here is to save/evaluate rank 0's state buffers (or broadcast them from rank 0).
//
// Modes: set_training(true) (default) uses batch statistics and updates the running ones;
// set_training(false) normalizes with the running statistics (evaluation) and allows no backward().
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/buffer.h"
#include "core/model.h"
#include "models/resnet/resnet_stem.h"

namespace tt {

enum class ResnetBlock { Basic, Bottleneck };

struct ResnetPreset;

struct ResnetConfig {
  ResnetBlock block = ResnetBlock::Basic;
  std::vector<int> layers;  // blocks per stage, e.g. {2, 2, 2, 2} for resnet18
  int width = 64;           // channels of the stem and of stage 0's 3x3 convs
  int in_channels = 3;      // image channels (1 for MNIST / Fashion-MNIST, 3 for CIFAR / ImageNet)
  int image_size = 224;     // H = W of the input images
  int num_classes = 1000;
  ResnetStem stem = ResnetStem::Auto;

  bool small_stem() const;  // the stem Auto resolves to
  int expansion() const { return block == ResnetBlock::Basic ? 1 : 4; }
  int feature_channels() const;  // channels entering the classifier
  // Throws InputError when a value is not positive or the image is too small for the network.
  void validate() const;
  std::size_t num_params() const;        // floats in the flat parameter buffer
  std::size_t max_stage_params() const;  // the largest stage's floats (a ZeRO-3 unit)
  std::size_t num_buffers() const;       // floats of batch-norm running statistics
  std::string describe() const;          // e.g. "basic [2,2,2,2] w=64 3x224x224 -> 1000, imagenet stem"

  // Named presets; preset() throws InputError listing the valid names on an unknown name.
  static std::vector<ResnetPreset> presets();
  static ResnetConfig preset(const std::string& name);
  static bool is_preset(const std::string& name);
};

struct ResnetPreset {
  std::string name;
  ResnetConfig config;
  std::string note;  // one line for `teetrain models`
};

// Result of evaluate(): summed (not mean) loss and correct predictions over the batch (correct is
// always >= 0 for a classifier).
using EvalCounts = EvalResult;

// Layout of a ResNet: the parameter/state tables and the conv/bn units, computed from a config
// alone (so parameter counts and FLOPs need no model). Activation pointers are filled by Resnet.
struct ResnetConvBn {
  Conv2dShape conv;      // B filled in per call
  std::size_t w = 0;     // param offset of the conv weight (OC, IC, KH, KW)
  std::size_t bn_w = 0;  // param offsets of the bn weight and bias (OC)
  std::size_t bn_b = 0;
  std::size_t run_mean = 0;  // state offsets of the running mean and var (OC)
  std::size_t run_var = 0;
  // Activations (device views into the arena of the reserved batch):
  const float* in = nullptr;  // conv input (B, IC, H, W)
  float* conv_out = nullptr;  // conv output = bn input (B, OC, OH, OW)
  float* mean = nullptr;      // (OC) batch mean saved for backward
  float* rstd = nullptr;      // (OC)
  float* out = nullptr;       // bn (+ReLU) output (B, OC, OH, OW); for a block's last unit, the block output
  std::size_t out_numel() const {  // per image
    return static_cast<std::size_t>(conv.OC) * static_cast<std::size_t>(conv.OH()) *
           static_cast<std::size_t>(conv.OW());
  }
};

struct ResnetBlockLayout {
  std::vector<ResnetConvBn> units;  // main path: 2 (basic) or 3 (bottleneck)
  bool has_down = false;
  ResnetConvBn down;  // 1x1 conv + bn shortcut (when has_down)
  std::size_t first_param = 0;
};

struct ResnetLayout {
  std::vector<ParamInfo> params;
  std::vector<ParamInfo> buffers;
  std::size_t num_params = 0;
  std::size_t num_buffers = 0;
  ResnetConvBn stem;
  bool maxpool = false;
  Pool2dShape pool;  // B filled in per call
  std::vector<ResnetBlockLayout> blocks;
  std::size_t fc_w = 0;
  std::size_t fc_b = 0;
  int feat_C = 0;           // channels into the classifier
  int feat_HW = 0;          // H*W of the last stage
  std::size_t max_act = 0;  // largest activation tensor, floats per image

  static ResnetLayout build(const ResnetConfig& cfg);
};

class Resnet final : public Model {
 public:
  // Allocates parameters, gradients and state buffers (zeroed); call init_params() or load them.
  // `name` is what name() reports (a preset name); empty -> "resnet(" + cfg.describe() + ")".
  Resnet(Backend& backend, ResnetConfig cfg, std::string name = "");

  std::string name() const override { return name_; }
  const std::vector<ParamInfo>& params() const override { return lay_.params; }
  std::size_t num_params() const override { return lay_.num_params; }
  float* param_data() override { return params_buf_.as<float>(); }
  float* grad_data() override { return grads_buf_.as<float>(); }
  void place_grads(std::span<float> memory) override { grads_buf_.move_into(std::as_writable_bytes(memory)); }

  // Parameters from `seed` as torchvision initializes them (kaiming-normal fan_out convs, bn 1/0,
  // Linear's default uniform fc); running mean 0, running var 1.
  void init_params(uint64_t seed) override;
  // Allocates activations for batches of at most B images (T is ignored).
  void reserve(int B, int T = 0) override;
  // batch.images (B, C, H, W), batch.targets (B) labels; returns the mean cross-entropy. In training
  // mode also updates the running statistics. Throws InputError on a shape or label mismatch.
  float forward(const Batch& batch) override;
  void backward(const GradReadyFn& on_ready) override;
  void zero_grad() override;
  StepFlops flops(int B, int /*T*/) const override { return flops_for(cfg_, B); }
  std::size_t activation_bytes(int B, int /*T*/) const override { return activation_bytes_for(cfg_, B); }
  static StepFlops flops_for(const ResnetConfig& cfg, int B);
  static std::size_t activation_bytes_for(const ResnetConfig& cfg, int B);

  // Batch-norm running statistics (see the header comment). Offsets index state_data().
  std::vector<ParamInfo> state_buffers() const override { return lay_.buffers; }
  std::size_t num_state_floats() const override { return lay_.num_buffers; }
  float* state_data() override { return buffers_buf_.as<float>(); }  // device, (num_state_floats)

  void set_training(bool training) override { training_ = training; }
  bool training() const { return training_; }

  // Forward in the current mode (call set_training(false) first for evaluation); returns the argmax
  // class of each image (B). batch.targets may be empty. Invalidates the state kept for backward().
  std::vector<int32_t> predict(const Batch& batch);
  // Forward in the current mode with labels: summed loss and number of correct argmax predictions.
  EvalCounts evaluate(const Batch& batch) override;

  const ResnetConfig& config() const { return cfg_; }
  const ParamInfo& param(const std::string& name) const;  // throws InputError if there is none
  // Device logits (B, classes) of the last forward.
  const float* logits() const { return v_.logits; }

 private:
  // Lays out the arenas for batch B; with null bases only the sizes (returned) are meaningful.
  struct ArenaSizes {
    std::size_t acts = 0, dacts = 0, ints = 0;  // floats, floats, int32s
  };
  // Views into the arenas that are not per-unit (those live in the layout's ResnetConvBn).
  struct Views {
    float* images = nullptr;    // (B, IC, H, W)
    float* pooled = nullptr;    // (B, width, H2, W2) maxpool output (ImageNet stem)
    int32_t* argmax = nullptr;  // (B, width, H2, W2)
    int32_t* labels = nullptr;  // (B)
    float* feats = nullptr;     // (B, feat_C) global-average-pooled
    float* logits = nullptr;    // (B, classes)
    float* probs = nullptr;     // (B, classes)
    float* losses = nullptr;    // (B)
    float* scratch = nullptr;   // (B, max_act) downsample bn output
    float* dbuf[5] = {};        // (B, max_act) each: activation-gradient buffers (resnet_backward.cpp)
    float* dlogits = nullptr;   // (B, classes)
    float* dfeats = nullptr;    // (B, feat_C)
  };
  static ArenaSizes carve(const ResnetConfig& cfg, ResnetLayout& lay, Views& v, float* acts, float* dacts,
                          int32_t* ints, int B);
  // Grows the conv workspace to what every conv needs at batch B (see reserve()).
  void reserve_workspace(int B);
  void run_forward(const Batch& batch, bool with_loss);
  void convbn_forward(ResnetConvBn& u, float* bn_out, bool relu, int B);
  void convbn_backward(ResnetConvBn& u, float* dinp, float* dconv, const float* dbn_out, int B);

  Backend& backend_;
  ResnetConfig cfg_;
  std::string name_;
  ResnetLayout lay_;
  DeviceBuffer params_buf_;   // (num_params)
  DeviceBuffer grads_buf_;    // (num_params)
  DeviceBuffer buffers_buf_;  // (num_buffers) running means and variances

  // Activation arenas for the reserved batch res_B_ (a smaller batch uses a prefix of every view).
  int res_B_ = 0;
  DeviceBuffer acts_buf_;
  DeviceBuffer dacts_buf_;
  DeviceBuffer ints_buf_;  // int32 labels and maxpool argmax
  DeviceBuffer ws_buf_;    // conv workspace, (ws_floats_)
  std::size_t ws_floats_ = 0;
  Views v_;

  int cur_B_ = 0;
  bool have_forward_ = false;  // a training-mode forward(batch) with labels that backward() may use
  bool training_ = true;
};

}  // namespace tt
