// What every model's layout is built from: named parameter tensors at consecutive offsets of one flat
// buffer (forward order, so backward finalises gradients from the top down), and aligned views carved
// out of one activation arena.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/model.h"

namespace tt {

// One tensor of `shape` at `offset` (floats); numel is the product of the shape.
inline ParamInfo make_param_info(std::string name, std::vector<int64_t> shape, std::size_t offset,
                                 bool decay) {
  ParamInfo p;
  p.name = std::move(name);
  p.numel = 1;
  for (int64_t d : shape) p.numel *= static_cast<std::size_t>(d);
  p.shape = std::move(shape);
  p.offset = offset;
  p.decay = decay;
  return p;
}

// Appends tensors in forward order. Weight decay by the usual rule unless told otherwise: matrices
// (embeddings and Linear weights) decay, biases and norm parameters do not.
class ParamTableBuilder {
 public:
  std::size_t add(std::string name, std::vector<int64_t> shape) {
    const bool decay = shape.size() >= 2;
    return add(std::move(name), std::move(shape), decay);
  }
  std::size_t add(std::string name, std::vector<int64_t> shape, bool decay) {
    table_.push_back(make_param_info(std::move(name), std::move(shape), size_, decay));
    size_ += table_.back().numel;
    return table_.back().offset;
  }
  std::size_t size() const { return size_; }  // floats so far
  std::vector<ParamInfo> take() { return std::move(table_); }

 private:
  std::vector<ParamInfo> table_;
  std::size_t size_ = 0;
};

// Hands out consecutive views of an arena, each starting on a 64-byte boundary (16 floats) so that
// vector loads and device kernels see aligned rows; with a null base it only counts.
template <typename T>
class ArenaCarver {
 public:
  static constexpr std::size_t kAlign = 64 / sizeof(T);
  explicit ArenaCarver(T* base) : base_(base) {}
  T* take(std::size_t n) {
    T* p = base_ ? base_ + used_ : nullptr;
    used_ += (n + kAlign - 1) / kAlign * kAlign;
    return p;
  }
  std::size_t used() const { return used_; }

 private:
  T* base_;
  std::size_t used_ = 0;
};

// True when name ends with suffix (parameter roles are named by their suffix).
inline bool name_ends_with(const std::string& name, const std::string& suffix) {
  return name.size() >= suffix.size() &&
         name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace tt
