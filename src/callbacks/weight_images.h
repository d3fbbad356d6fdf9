// What Keras's TensorBoard callback draws of a weight with write_images (its _log_weight_as_image,
// then tf.summary.image).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "tandem/tensor.h"

namespace tandem::callbacks::detail {

// A batch of images, pixels [count, height, width, channels] rows first.
struct WeightImages {
  int64_t count = 0, height = 0, width = 0;
  int channels = 1;
  std::vector<uint8_t> pixels;
};

// The weight with its dimensions of size 1 removed: of rank 1 (n), one n × 1 image; of rank 2, one
// image with the shorter side as its height; of rank 3 (a, b, c), c images a × b; of rank 4
// (n, h, w, c) with c 1, 3 or 4, n images h × w with c channels; otherwise none. At most the first 3
// images (tf.summary.image's max_outputs), each value v as the byte trunc(clamp(v · 255.5, 0, 255))
// (tf.image.convert_image_dtype with saturation, in the weight's float type).
std::optional<WeightImages> weight_images(const Tensor& weight);

}  // namespace tandem::callbacks::detail
