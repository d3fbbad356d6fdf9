// resize2d: channels-last images resized along height and width as jax.image.resize does without
// antialiasing (what Keras 3 on JAX computes), and the per-axis sampling both backends share.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/op_registry.h"

namespace tandem::ops {

enum class ResizeMethod : int64_t { nearest = 0, bilinear = 1 };

// How one axis of `in` positions is sampled at `out` positions. Output o reads input index[2o]
// with weight[2o] and index[2o + 1] with weight[2o + 1] (nearest: one index, the second weight 0).
// The reverse, for gradients gathered without atomics: input i is read by outputs
// source[start[i] .. start[i + 1]) with weights share[...] (only non-zero weights are listed).
//   nearest:  index floor((o + 0.5) · in / out), computed in float32 as JAX does;
//   bilinear: sample (o + 0.5) · in / out − 0.5 between its two neighbours, clamped to the edge
//             pixels (JAX's triangle kernel normalised over the pixels that exist).
struct ResizeAxis {
  std::vector<int64_t> index;
  std::vector<double> weight;
  std::vector<int64_t> start, source;
  std::vector<double> share;
};
ResizeAxis resize_axis(int64_t in, int64_t out, ResizeMethod method);

// x (n, h, w, c) -> (n, height, width, c).
Value resize2d(Graph& g, Value x, int64_t height, int64_t width, ResizeMethod method);
// The adjoint of resize2d: dy (n, height, width, c) -> dx (n, in_height, in_width, c).
Value resize2d_grad(Graph& g, Value dy, int64_t in_height, int64_t in_width, ResizeMethod method);

}  // namespace tandem::ops
