// Image ops of the augmentation layers on channels-last (N, H, W, C) tensors: the graph-building
// functions. backend/image_transform.h holds the per-pixel math the kernels share.
#pragma once

#include <string>

#include "graph/op_registry.h"

namespace tandem::ops {

// Keras's ops.image.affine_transform: output pixel (x, y) of image n samples images[n] at the point
// transforms[n] (N, 8) maps it to. interpolation "nearest" or "bilinear"; fill_mode "reflect",
// "wrap", "constant" or "nearest"; fill_value is what "constant" reads outside the image. Linear
// in the images; its gradient there is image_affine_transform_grad (the adjoint sampling).
Value image_affine_transform(Graph& g, Value images, Value transforms, const std::string& interpolation,
                             const std::string& fill_mode, double fill_value);

// The random parameters of the augmentation layers, one row per image: kind "translation",
// "rotation" or "zoom" give (N, 8) transforms for image_affine_transform; "flip" gives (N, 1) of
// 1 (flip) or 0, "contrast" (N, 1) contrast factors. Ranges as Keras's layers keep them: the
// height's (or the only) [h_lower, h_upper], the width's [w_lower, w_upper]; same_zoom: the width
// zooms as the height. A row's draws depend only on (seed, step, the row's global index), like
// dropout's masks; `images` gives only the shape.
struct RandomImageParams {
  std::string kind;
  double h_lower = 0, h_upper = 0, w_lower = 0, w_upper = 0;
  bool same_zoom = false;
  uint64_t seed = 0;
};
Value random_image_params(Graph& g, Value images, Value step, const RandomImageParams& p);

// The attributes' names as the codes of the kernels' math (backend/image_transform.h's enums, in
// the order listed in image_affine_transform.cpp); an unknown name throws ShapeError
// naming `op` and the names accepted.
int interpolation_code(const std::string& name, const char* op);
int fill_mode_code(const std::string& name, const char* op);
int param_kind_code(const std::string& name, const char* op);

}  // namespace tandem::ops
