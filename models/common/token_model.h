// TokenModel: what the token models (GPT-2, BERT) share: a name, a table of named parameter tensors in
// forward order, one flat device buffer each for the parameters and their gradients, and activation
// arenas grown to the largest (B, T) batch seen (a smaller batch uses a prefix of every view, since
// each view is contiguous in its leading (B, T) dimensions).
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/backend.h"
#include "engine/core/buffer.h"
#include "engine/core/model.h"

namespace tt {

class TokenModel : public Model {
 public:
  std::string name() const override { return name_; }
  const std::vector<ParamInfo>& params() const override { return params_; }
  std::size_t num_params() const override { return num_params_; }
  float* param_data() override { return params_buf_.as<float>(); }
  float* grad_data() override { return grads_buf_.as<float>(); }
  void zero_grad() override;
  // The tensor named `name`; InputError naming the family when there is none.
  const ParamInfo& param(const std::string& name) const;

 protected:
  // Takes the table (forward order, offsets from 0) and allocates zeroed buffers; RunError when the
  // table's size is not `expected_floats` (the family's own count).
  TokenModel(Backend& backend, std::string family, std::string name, std::vector<ParamInfo> table,
             std::size_t expected_floats);

  // Arena sizes in floats, (forward activations, activation gradients), for a B x T batch.
  using ArenaSizes = std::function<std::pair<std::size_t, std::size_t>(int B, int T)>;
  // Validates a B x T batch against the model's context (InputError naming the family) and grows the
  // arenas to hold it. True when they were reallocated: the caller then carves its views again over
  // acts_buf_ and dacts_buf_ for (res_B_, res_T_), and any saved forward is gone.
  bool grow_arenas(int B, int T, int context, const ArenaSizes& sizes);

  Backend& backend_;
  std::string family_;  // "gpt2", "bert": prefixes messages
  std::string name_;
  std::vector<ParamInfo> params_;
  std::size_t num_params_ = 0;
  DeviceBuffer params_buf_;  // (num_params)
  DeviceBuffer grads_buf_;   // (num_params)

  int res_B_ = 0;  // the shape the arenas hold
  int res_T_ = 0;
  DeviceBuffer acts_buf_;
  DeviceBuffer dacts_buf_;
  DeviceBuffer tokens_buf_;
  int32_t* tokens_ = nullptr;   // (B, T)
  int32_t* targets_ = nullptr;  // (B, T)
};

}  // namespace tt
