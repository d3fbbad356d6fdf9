// Per-row transforms that fit applies to each training batch as the prefetch thread stages it:
// augmentation (random flips and shifts) and normalisation, changing x in place.
#pragma once

#include <functional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "tandem/tensor.h"

namespace tandem::datasets {

// Changes one row of x (float32; `row_shape` is the row's shape, batch excluded). `random` is
// seeded from (fit's seed, epoch, the row's index in the dataset) alone, so a row gets the same draws
// whatever the batch size, the shuffle order or the number of devices, and again on resume. Draw
// from it with random() itself: std::uniform_*_distribution differ between standard libraries.
using RowTransform = std::function<void(std::span<float> x, const Shape& row_shape, std::mt19937_64& random)>;

// Keras's RandomFlip on (height, width, channels) rows: "horizontal" mirrors the width axis with
// probability 1/2, "vertical" the height axis, "horizontal_and_vertical" each on its own draw.
RowTransform random_flip(const std::string& mode = "horizontal");

// Keras's RandomTranslation with interpolation "nearest" and fill_mode "constant" (fill 0): shifts
// (height, width, channels) rows by whole pixels, dy uniform in [-height_factor·H, height_factor·H]
// rounded, likewise dx. Factors in [0, 1].
RowTransform random_translation(double height_factor, double width_factor);

// A crop of the image padded with `padding` zeros on every side, back to its own size, at a
// window whose corner is uniform in 0 … 2·padding along each axis (torchvision's
// RandomCrop(size, padding), the usual CIFAR augmentation). The row keeps its shape.
RowTransform random_crop(int64_t padding);

// Keras's Normalization with given statistics: (x − mean) / sqrt(variance) along the last axis;
// mean and variance hold one value, or one per element of the last axis.
RowTransform normalization(std::vector<float> mean, std::vector<float> variance);

}  // namespace tandem::datasets
