// random_image_params: the augmentation layers' per-image random parameters (transforms, flip
// decisions, contrast factors). Like dropout's mask, a row's draws are a hash of (seed, step, the
// row's global index): splitting a batch across devices or micro-batches (each with its row
// offset) or across threads cannot change them. Nothing flows back through them.
#include "ops/image.h"
#include "ops/layout_rules.h"
#include "ops/ops.h"
#include "tandem/errors.h"

namespace tandem::ops {

namespace {
// Each device's rows keep their global indices, so the draws are the single-device ones.
void local_row_offset(Attrs& attrs, const graph::Signature& sig, int position) {
  if (sig.in[0].is_split()) attrs.set("row_offset", attrs.i("row_offset") + sig.in[0].offset(position));
}
}  // namespace

REGISTER_OP(
    .name = "random_image_params",
    .infer = [](const Attrs& a, const std::vector<TensorType>& in) {
      if (in[0].shape.rank() != 4 || !is_float(in[0].dtype))
        throw ShapeError("random_image_params: expected float images of rank 4 (batch, height, width, channels), got " + in[0].shape.str());
      if (in[1].dtype != DType::I64 || in[1].shape.rank() != 0) throw ShapeError("random_image_params: the step input must be an int64 scalar");
      // A transform per image, or one number (flip: 1 or 0; contrast: the factor).
      const std::string& kind = a.s("kind");
      param_kind_code(kind, "random_image_params");
      return one({Shape{in[0].shape[0], kind == "flip" || kind == "contrast" ? 1 : 8}, in[0].dtype});
    },
    .zero_grad = true, .layout = rows({.batch_inputs = {0}}), .localize = local_row_offset);

Value random_image_params(Graph& g, Value images, Value step, const RandomImageParams& p) {
  const int64_t rows = g.type(images).shape.rank() ? g.type(images).shape[0] : 1;
  return g.add("random_image_params", {images, step},
               {{"kind", p.kind}, {"h_lower", p.h_lower}, {"h_upper", p.h_upper}, {"w_lower", p.w_lower}, {"w_upper", p.w_upper},
                {"same_zoom", p.same_zoom}, {"seed", static_cast<int64_t>(p.seed)}, {"row_offset", int64_t{0}}, {"micro_rows", rows}});
}

}  // namespace tandem::ops
