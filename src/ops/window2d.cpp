// The geometry of a sliding 2-D window (convolution kernel or pool) over channels-last images.
#include <algorithm>

#include "ops/conv.h"
#include "tandem/errors.h"

namespace tandem::ops {

namespace {
std::string pair_str(int64_t a, int64_t b) { return "(" + std::to_string(a) + ", " + std::to_string(b) + ")"; }

Pair read_pair(const Attrs& a, const char* key, const char* op) {
  if (!a.has(key)) return {1, 1};
  const std::vector<int64_t> v = a.ints(key);
  if (v.size() != 2 || v[0] <= 0 || v[1] <= 0) {
    std::string got;
    for (int64_t x : v) got += (got.empty() ? "" : ", ") + std::to_string(x);
    throw ShapeError(std::string(op) + ": " + key + " must be two positive integers, got (" + got + ")");
  }
  return {v[0], v[1]};
}
}  // namespace

Window2D window2d(const Shape& input, int64_t kh, int64_t kw, const Attrs& a, const char* op) {
  if (input.rank() != 4)
    throw ShapeError(std::string(op) + ": expected an input of rank 4 (batch, height, width, channels), got " + input.str());
  if (kh <= 0 || kw <= 0)
    throw ShapeError(std::string(op) + ": window size must be positive, got " + pair_str(kh, kw));
  Window2D w;
  w.n = input[0], w.h = input[1], w.w = input[2], w.c = input[3];
  w.kh = kh, w.kw = kw;
  const Pair s = read_pair(a, "strides", op), d = read_pair(a, "dilation", op);
  w.sh = s[0], w.sw = s[1], w.dh = d[0], w.dw = d[1];
  const std::string& padding = a.s("padding");
  // The span of the dilated window: (k − 1)·d + 1 input positions.
  const int64_t span_h = (kh - 1) * w.dh + 1, span_w = (kw - 1) * w.dw + 1;
  if (padding == "valid") {
    if (span_h > w.h || span_w > w.w)
      throw ShapeError(std::string(op) + ": window " + pair_str(kh, kw) + " with dilation " + pair_str(w.dh, w.dw) +
                       " spans " + pair_str(span_h, span_w) + ", larger than the input's spatial size " +
                       pair_str(w.h, w.w) + " (input " + input.str() + ") with padding \"valid\"");
    w.oh = (w.h - span_h) / w.sh + 1;
    w.ow = (w.w - span_w) / w.sw + 1;
  } else if (padding == "same") {
    w.oh = (w.h + w.sh - 1) / w.sh;
    w.ow = (w.w + w.sw - 1) / w.sw;
    const int64_t total_h = std::max<int64_t>((w.oh - 1) * w.sh + span_h - w.h, 0);
    const int64_t total_w = std::max<int64_t>((w.ow - 1) * w.sw + span_w - w.w, 0);
    w.pad_top = total_h / 2, w.pad_bottom = total_h - w.pad_top;
    w.pad_left = total_w / 2, w.pad_right = total_w - w.pad_left;
  } else {
    throw ShapeError(std::string(op) + ": padding must be \"valid\" or \"same\", got \"" + padding + "\"");
  }
  return w;
}

}  // namespace tandem::ops
