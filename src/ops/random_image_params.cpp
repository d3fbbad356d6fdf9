// random_image_params: the augmentation layers' per-image random parameters (transforms, flip
// decisions, contrast factors). Like dropout's mask, a row's draws are a hash of (seed, step, the
// row's global index): splitting a batch across devices or micro-batches (each with its row
// offset) or across threads cannot change them. Nothing flows back through them.
#include "backend/image_transform.h"
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
      const int kind = param_kind_code(a.s("kind"), "random_image_params");
      return one({Shape{in[0].shape[0], image::param_count(kind)}, in[0].dtype});
    },
    .zero_grad = true, .layout = rows({.batch_inputs = {0}}), .localize = local_row_offset);

image::ParamSpec random_image_param_spec(const Attrs& a, const Shape& images) {
  image::ParamSpec p;
  p.kind = param_kind_code(a.s("kind"), "random_image_params");
  p.h_lower = a.f("h_lower"), p.h_upper = a.f("h_upper"), p.w_lower = a.f("w_lower"), p.w_upper = a.f("w_upper");
  p.same_zoom = a.b("same_zoom");
  p.height = images[1], p.width = images[2];
  p.seed = static_cast<uint64_t>(a.i("seed"));
  return p;
}

Value random_image_params(Graph& g, Value images, Value step, const RandomImageParams& p) {
  const int64_t rows = g.type(images).shape.rank() ? g.type(images).shape[0] : 1;
  return g.add("random_image_params", {images, step},
               {{"kind", p.kind}, {"h_lower", p.h_lower}, {"h_upper", p.h_upper}, {"w_lower", p.w_lower}, {"w_upper", p.w_upper},
                {"same_zoom", p.same_zoom}, {"seed", static_cast<int64_t>(p.seed)}, {"row_offset", int64_t{0}}, {"micro_rows", rows}});
}

}  // namespace tandem::ops
