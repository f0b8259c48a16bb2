// The ResNet stem choice on its own, so that the model registry's options (models/model_registry.h) can
// carry it without including the model.
#pragma once

namespace tt {

enum class ResnetStem {
  Auto,      // Small for image_size <= 64, ImageNet otherwise
  ImageNet,  // 7x7/2 conv + 3x3/2 maxpool
  Small,     // 3x3/1 conv, no maxpool
};

}  // namespace tt
