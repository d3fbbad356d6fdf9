// Random image augmentation layers on channels-last images (batch, height, width, channels), with
// Keras 3's names, arguments, defaults and configs. They change images only while training (fit);
// in evaluate and predict they pass them through unchanged, as Keras's do.
//
// Each image of a batch gets its own random parameters, drawn from (the layer's seed, the training
// step, the image's global row in the batch) alone: the same seed gives bitwise the same training,
// whatever the number of threads, devices or micro-batches the batch is split across.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "tandem/layer.h"

namespace tandem::layers {

// Keras's factor arguments: one number f, or a pair (lower, upper) given as {lower, upper}. What a
// single number means is each layer's (usually the range −f … f).
struct Factor {
  double first = 0, second = 0;
  bool pair = false;
  Factor() = default;
  Factor(double f) : first(f) {}
  Factor(double lower, double upper) : first(lower), second(upper), pair(true) {}
};

// Flips each image with probability 1/2: mode "horizontal" mirrors left-right, "vertical"
// top-bottom, "horizontal_and_vertical" both at once (Keras 3 flips both axes on one draw). seed:
// the layer's random stream (none: drawn from the global seed).
LayerRef RandomFlip(const std::string& mode = "horizontal_and_vertical", std::optional<uint64_t> seed = std::nullopt,
                    const std::string& name = "");

// How the geometric layers sample: interpolation "bilinear" or "nearest"; fill_mode for points
// outside the image: "reflect" (d c b a | a b c d | d c b a), "wrap" (a b c d | a b c d),
// "constant" (fill_value) or "nearest" (the edge pixel).
struct RandomTransformOptions {
  std::string fill_mode = "reflect";
  std::string interpolation = "bilinear";
  std::optional<uint64_t> seed{};
  double fill_value = 0.0;
  std::string name{};
};

// Shifts each image by a random fraction of its height and width: height_factor f shifts by
// −f·height … f·height rows ({lower, upper}: lower·height … upper·height; positive moves the
// content down), width_factor likewise for columns (positive moves it right). Factors in [−1, 1].
LayerRef RandomTranslation(Factor height_factor, Factor width_factor, const RandomTransformOptions& options = {});

// Rotates each image about its centre by a random fraction of a full turn: factor f rotates by
// −f·360° … f·360°, {lower, upper} by lower·360° … upper·360° (positive: counter-clockwise).
LayerRef RandomRotation(Factor factor, const RandomTransformOptions& options = {});

// Zooms each image about its centre: height_factor f scales the height by a random 1 + (−f … f)
// ({lower, upper}: 1 + lower … 1 + upper); above 1 zooms out, below 1 zooms in. width_factor
// likewise for the width; none: the width keeps the height's zoom (the aspect ratio). Factors in
// (−1, 1].
LayerRef RandomZoom(Factor height_factor, std::optional<Factor> width_factor = std::nullopt, const RandomTransformOptions& options = {});

struct RandomContrastOptions {
  std::pair<double, double> value_range{0, 255};  // the output is clipped to it
  std::optional<uint64_t> seed{};
  std::string name{};
};
// Scales each image's contrast per channel: (x − mean) · c + mean, the mean over height and width,
// c drawn in [1 − lower, 1 + upper], the result clipped to value_range. As Keras 3 reads factor: a
// number f in [0, 1] means (lower, upper) = (0, f), so the contrast only grows; {lower, upper}
// gives both.
LayerRef RandomContrast(Factor factor, const RandomContrastOptions& options = {});

}  // namespace tandem::layers
