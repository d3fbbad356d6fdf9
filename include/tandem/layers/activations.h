// Activation layers, with Keras 3's names, arguments, defaults and weights. Each keeps its input's
// shape and passes its mask on; the activation functions they apply are also accepted by name
// wherever a layer takes an activation (docs/activations.md lists them).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tandem/layer.h"

namespace tandem::layers {

// Keras's relu with its three parameters: x above `threshold`, else 0; clipped to
// [0, max_value] when one is given; minus negative_slope · max(threshold − x, 0).
// ReLU() is max(x, 0); ReLU(6.0) is relu6. Each argument must be non-negative.
LayerRef ReLU(std::optional<double> max_value = std::nullopt, double negative_slope = 0.0, double threshold = 0.0,
              const std::string& name = "");

// x for x >= 0, negative_slope · x otherwise; negative_slope must be non-negative.
LayerRef LeakyReLU(double negative_slope = 0.3, const std::string& name = "");

struct PReLUOptions {
  std::string alpha_initializer = "zeros";
  // Axes (counted with the batch axis, so 1 is the first sample axis) along which alpha is shared:
  // {1, 2} gives a (batch, height, width, channels) input one alpha per channel.
  std::vector<int64_t> shared_axes{};
  Regularizer alpha_regularizer{};
  Constraint alpha_constraint{};  // applied after each update
  std::string name{};
};
// x for x >= 0, alpha · x otherwise, with a learned weight `alpha` of the input's sample shape (1
// along the shared axes).
LayerRef PReLU(const PReLUOptions& options = {});

// x for x > 0, alpha · (eˣ − 1) otherwise.
LayerRef ELU(double alpha = 1.0, const std::string& name = "");

// Softmax along `axis` (counted with the batch axis; -1 the last). With a mask (batch, steps)
// broadcastable to the input as Keras requires, masked positions get probability 0.
LayerRef Softmax(int axis = -1, const std::string& name = "");

}  // namespace tandem::layers
