// Per-pixel math of the image transform ops, written once for both backends (TANDEM_HD): where an
// output pixel samples its input under an 8-parameter transform, and the random parameters the
// augmentation layers draw for a sample. The CPU tests of this math cover the CUDA kernels too.
//
// A transform (a0, a1, a2, b0, b1, b2, c0, c1) maps output pixel (x, y) (column, row) to input
// point ((a0·x + a1·y + a2) / k, (b0·x + b1·y + b2) / k), k = c0·x + c1·y + 1: Keras's
// ops.image.affine_transform. Points are sampled as JAX's scipy.ndimage.map_coordinates samples
// them (Keras's JAX backend): "nearest" rounds half away from zero, "bilinear" weighs the four
// neighbours; an index outside the image is folded back by the fill mode ("reflect": d c b a | a b
// c d | d c b a, "wrap", "nearest": the edge pixel) or, with "constant", contributes fill_value.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/host_device.h"
#include "core/random.h"
#include "graph/attrs.h"
#include "ops/image.h"
#include "tandem/tensor.h"

namespace tandem::image {

enum Interpolation : int { kNearest = 0, kBilinear = 1 };
enum FillMode : int { kReflect = 0, kWrap = 1, kConstant = 2, kEdge = 3 };

TANDEM_HD int64_t floor_mod(int64_t a, int64_t n) {
  const int64_t r = a % n;
  return r < 0 ? r + n : r;
}

// The pixel an index of an axis of `size` reads, or -1 when it reads fill_value (constant mode).
TANDEM_HD int64_t fold_index(int64_t i, int64_t size, int mode) {
  switch (mode) {
    case kWrap: return floor_mod(i, size);
    case kEdge: return i < 0 ? 0 : (i >= size ? size - 1 : i);
    case kConstant: return i >= 0 && i < size ? i : -1;
    default: {
      // JAX's reflect: a triangle wave over half-pixel positions (2i + 1 on a grid of 2·size + 1).
      const int64_t s = 2 * size;
      int64_t m = floor_mod(2 * i + 1 + s, 2 * s) - s;
      m = m < 0 ? -m : m;
      return (m - 1) / 2;
    }
  }
}

// Beyond this many pixels (and for NaN) a sample point reads fill_value whatever the fill mode: the
// index arithmetic stays in range, and no image is that large.
constexpr double kFarAway = 1e9;

// The (up to four) input pixels output pixel (ox, oy) reads, as pixel numbers row·w + column (-1:
// fill_value), and their weights, in JAX's order of summation. Returns how many.
template <class T>
TANDEM_HD int sample_taps(const T* t, int64_t ox, int64_t oy, int64_t h, int64_t w, int interpolation, int mode, int64_t* pixel,
                          T* weight) {
  const T x = T(ox), y = T(oy);
  const T k = t[6] * x + t[7] * y + T(1);
  const T sx = (t[0] * x + t[1] * y + t[2]) / k, sy = (t[3] * x + t[4] * y + t[5]) / k;
  if (k == T(0) || !(sx > T(-kFarAway) && sx < T(kFarAway) && sy > T(-kFarAway) && sy < T(kFarAway))) {
    pixel[0] = -1;
    weight[0] = T(1);
    return 1;
  }
  if (interpolation == kNearest) {
    const int64_t r = fold_index(static_cast<int64_t>(std::round(sy)), h, mode), c = fold_index(static_cast<int64_t>(std::round(sx)), w, mode);
    pixel[0] = r < 0 || c < 0 ? -1 : r * w + c;
    weight[0] = T(1);
    return 1;
  }
  const T fy = std::floor(sy), fx = std::floor(sx);
  const T wy1 = sy - fy, wx1 = sx - fx;
  const T wy[2] = {T(1) - wy1, wy1}, wx[2] = {T(1) - wx1, wx1};
  const auto iy = static_cast<int64_t>(fy), ix = static_cast<int64_t>(fx);
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 2; ++b) {
      const int64_t r = fold_index(iy + a, h, mode), c = fold_index(ix + b, w, mode);
      pixel[2 * a + b] = r < 0 || c < 0 ? -1 : r * w + c;
      weight[2 * a + b] = wy[a] * wx[b];
    }
  return 4;
}

// ---- The augmentation layers' random parameters ----------------------------------------------------

enum ParamKind : int { kFlip = 0, kTranslation = 1, kRotation = 2, kZoom = 3, kContrast = 4 };

// Ranges as Keras's layers keep them (lower, upper); `height`/`width` the image's size.
struct ParamSpec {
  int kind = kFlip;
  double h_lower = 0, h_upper = 0, w_lower = 0, w_upper = 0;
  bool same_zoom = false;  // RandomZoom without width_factor: the width's zoom is the height's
  int64_t height = 1, width = 1;
  uint64_t seed = 0;
};

// How many parameters a kind makes per sample: a transform (8) or one number (flip 1/0, contrast
// factor).
TANDEM_HD int param_count(int kind) { return kind == kFlip || kind == kContrast ? 1 : 8; }

// The parameters of the sample whose global row index is `row` at training step `step`: each draw
// is rng::uniform of (seed, step, row, draw number), so they depend on nothing else.
template <class T>
TANDEM_HD void draw_params(const ParamSpec& p, uint64_t step, uint64_t row, T* out) {
  const double u0 = rng::uniform(p.seed, step, row, 0), u1 = rng::uniform(p.seed, step, row, 1);
  auto between = [](double lo, double hi, double u) { return lo + (hi - lo) * u; };
  double t[8] = {1, 0, 0, 0, 1, 0, 0, 0};
  const double cx = 0.5 * double(p.width - 1), cy = 0.5 * double(p.height - 1);
  switch (p.kind) {
    case kFlip: t[0] = u0 <= 0.5 ? 1.0 : 0.0; break;  // Keras flips where uniform() <= 0.5
    case kContrast: t[0] = between(1.0 - p.h_lower, 1.0 + p.h_upper, u0); break;
    case kTranslation:  // the output at (x, y) reads the input at (x − dx, y − dy)
      t[5] = -between(p.h_lower, p.h_upper, u0) * double(p.height);
      t[2] = -between(p.w_lower, p.w_upper, u1) * double(p.width);
      break;
    case kRotation: {  // about the image's centre, by an angle in turns × 360 degrees
      const double angle = between(p.h_lower * 360.0, p.h_upper * 360.0, u0) * (3.14159265358979323846 / 180.0);
      const double c = std::cos(angle), s = std::sin(angle);
      t[0] = c, t[1] = -s, t[2] = cx - cx * c + cy * s;
      t[3] = s, t[4] = c, t[5] = cy - cx * s - cy * c;
      break;
    }
    default: {  // kZoom: a factor above 1 reads a larger area (zooms out), about the centre
      const double zy = between(1.0 + p.h_lower, 1.0 + p.h_upper, u0);
      const double zx = p.same_zoom ? zy : between(1.0 + p.w_lower, 1.0 + p.w_upper, u1);
      t[0] = zx, t[2] = cx * (1.0 - zx);
      t[4] = zy, t[5] = cy * (1.0 - zy);
    }
  }
  for (int i = 0; i < param_count(p.kind); ++i) out[i] = static_cast<T>(t[i]);
}

// What a random_image_params node with attributes `a` on images of shape `images` draws (host
// code of both backends' kernel factories).
inline ParamSpec param_spec(const graph::Attrs& a, const Shape& images) {
  ParamSpec p;
  p.kind = ops::param_kind_code(a.s("kind"), "random_image_params");
  p.h_lower = a.f("h_lower"), p.h_upper = a.f("h_upper"), p.w_lower = a.f("w_lower"), p.w_upper = a.f("w_upper");
  p.same_zoom = a.b("same_zoom");
  p.height = images[1], p.width = images[2];
  p.seed = static_cast<uint64_t>(a.i("seed"));
  return p;
}

}  // namespace tandem::image
