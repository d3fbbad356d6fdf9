// image_affine_transform (Keras's ops.image.affine_transform) and its adjoint in the images,
// image_affine_transform_grad: the sampling weights scattered back onto the pixels they read.
// Both are linear in the image (fill_value aside), so each is the other's gradient; the transforms
// get none (the augmentation layers draw them, nothing upstream learns them).
#include "ops/image.h"
#include "ops/layout_rules.h"
#include "ops/ops.h"
#include "tandem/errors.h"

namespace tandem::ops {

namespace {
int code_of(const std::string& name, const char* op, const char* what, std::initializer_list<const char*> names) {
  int i = 0;
  std::string list;
  for (const char* n : names) {
    if (name == n) return i;
    list.append(i ? ", \"" : "\"").append(n).append("\"");
    ++i;
  }
  throw ShapeError(std::string(op).append(": ").append(what).append(" must be one of ").append(list).append(", got \"").append(name).append("\""));
}

InferFn infer_transform(const char* op) {
  return [op](const Attrs& a, const std::vector<TensorType>& in) {
    const Shape& x = in[0].shape;
    if (x.rank() != 4 || !is_float(in[0].dtype))
      throw ShapeError(std::string(op).append(": expected float images of rank 4 (batch, height, width, channels), got ").append(x.str()));
    const Shape& t = in[1].shape;
    if (t.rank() != 2 || t[0] != x[0] || t[1] != 8 || in[1].dtype != in[0].dtype)
      throw ShapeError(std::string(op).append(": expected transforms of shape (").append(std::to_string(x[0])).append(", 8) and the images' dtype, got ").append(t.str()));
    interpolation_code(a.s("interpolation"), op);
    fill_mode_code(a.s("fill_mode"), op);
    return one(in[0]);
  };
}

Value transform_op(Graph& g, const char* op, Value x, Value transforms, const Attrs& attrs, double fill_value) {
  return g.add(op, {x, transforms}, {{"interpolation", attrs.s("interpolation")}, {"fill_mode", attrs.s("fill_mode")}, {"fill_value", fill_value}});
}
}  // namespace

int interpolation_code(const std::string& name, const char* op) {
  return code_of(name, op, "interpolation", {"nearest", "bilinear"});  // the order of image::Interpolation
}
int fill_mode_code(const std::string& name, const char* op) {
  return code_of(name, op, "fill_mode", {"reflect", "wrap", "constant", "nearest"});  // image::FillMode
}
int param_kind_code(const std::string& name, const char* op) {
  return code_of(name, op, "kind", {"flip", "translation", "rotation", "zoom", "contrast"});  // image::ParamKind
}

// The gradient of the images is the adjoint sampling of dy; fill_value is a constant, not part of it.
REGISTER_OP(.name = "image_affine_transform", .infer = infer_transform("image_affine_transform"), .grad = [](GradContext& c) {
  c.set(0, transform_op(c.g, "image_affine_transform_grad", c.dy(), c.input(1), c.attrs(), 0.0));
}, .layout = rows({.batch_inputs = {0, 1}, .linear = {{0}}}));

// The adjoint's adjoint is the sampling itself, without the fill (a linear map's linear part).
REGISTER_OP(.name = "image_affine_transform_grad", .infer = infer_transform("image_affine_transform_grad"), .grad = [](GradContext& c) {
  c.set(0, transform_op(c.g, "image_affine_transform", c.dy(), c.input(1), c.attrs(), 0.0));
}, .layout = rows({.batch_inputs = {0, 1}, .linear = {{0}}}));

Value image_affine_transform(Graph& g, Value images, Value transforms, const std::string& interpolation, const std::string& fill_mode,
                             double fill_value) {
  return g.add("image_affine_transform", {images, transforms},
               {{"interpolation", interpolation}, {"fill_mode", fill_mode}, {"fill_value", fill_value}});
}

}  // namespace tandem::ops
