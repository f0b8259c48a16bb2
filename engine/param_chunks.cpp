#include "engine/param_chunks.h"

#include "tee/digest.h"

namespace tt {

std::string params_sha256(Backend& backend, Model& model) {
  tee::Sha256 h;
  for_param_chunks(backend, model, false,
                   [&](std::span<float> c) { h.update(tee::bytes_of(std::span<const float>(c))); });
  return tee::to_hex(h.finish());
}

}  // namespace tt
