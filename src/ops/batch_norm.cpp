// batch_norm_train (batch statistics) and batch_norm_infer (given statistics) over one channel
// axis, with fused gradient ops that produce dx, dgamma and dbeta in one pass.
#include "ops/normalization.h"
#include "ops/ops.h"
#include "tandem/errors.h"

namespace tandem::ops {

namespace {
// Checks x (float, rank >= 1) and that every per-channel input has shape (channels,).
int check_channels(const Attrs& a, const std::vector<TensorType>& in, const char* op, const char* const names[]) {
  const TensorType& x = in[0];
  if (!is_float(x.dtype)) throw ShapeError(std::string(op) + ": expected a float input, got " + dtype_name(x.dtype));
  const int axis = normalize_axis(a.i("axis"), x.shape.rank(), op);
  if (!(a.f("epsilon") > 0.0)) throw ShapeError(std::string(op) + ": epsilon must be positive, got " + std::to_string(a.f("epsilon")));
  const Shape channels{x.shape[axis]};
  for (std::size_t i = 1; i < in.size(); ++i) {
    if (in[i].shape != channels)
      throw ShapeError(std::string(op) + ": expected " + names[i] + " of shape " + channels.str() + " for input " +
                       x.shape.str() + " (channel axis " + std::to_string(axis) + "), got " + in[i].shape.str());
    if (in[i].dtype != x.dtype)
      throw ShapeError(std::string(op) + ": " + names[i] + " is " + dtype_name(in[i].dtype) + " but the input is " +
                       dtype_name(x.dtype));
  }
  return axis;
}

const char* const kTrainNames[] = {"x", "gamma", "beta"};
const char* const kInferNames[] = {"x", "gamma", "beta", "mean", "variance"};
const char* const kGradNames[] = {"dy", "x", "gamma", "mean", "variance"};

// Shape of a per-channel vector that broadcasts against x: 1 everywhere but the channel axis.
Shape channel_shape(const Shape& x, int axis) {
  std::vector<int64_t> d(static_cast<std::size_t>(x.rank()), 1);
  d[static_cast<std::size_t>(axis)] = x[axis];
  return Shape(d);
}

std::vector<TensorType> infer_grad(const Attrs& a, const std::vector<TensorType>& in) {
  // (dy, x, gamma, mean, variance) -> (dx, dgamma, dbeta)
  if (in[0] != in[1]) throw ShapeError("batch_norm_grad: dy " + in[0].shape.str() + " does not match x " + in[1].shape.str());
  std::vector<TensorType> rest(in.begin() + 1, in.end());
  check_channels(a, rest, "batch_norm_grad", kGradNames + 1);
  return {in[1], in[2], in[2]};
}
}  // namespace

REGISTER_OP(
    .name = "batch_norm_train",
    .infer = [](const Attrs& a, const std::vector<TensorType>& in) {
      const int axis = check_channels(a, in, "batch_norm_train", kTrainNames);
      const TensorType stat{Shape{in[0].shape[axis]}, in[0].dtype};
      return std::vector<TensorType>{in[0], stat, stat};
    },
    .grad = [](GradContext& c) {
      const Value x = c.input(0);
      const Shape xs = c.input_type(0).shape;
      const int axis = normalize_axis(c.attrs().i("axis"), xs.rank(), "batch_norm_train");
      const Shape kept = channel_shape(xs, axis);
      const double count = static_cast<double>(xs.num_elements() / xs[axis]);
      Value dx;
      auto add_dx = [&](Value d) { dx = dx.valid() ? add(c.g, dx, d) : d; };
      if (c.dy(0).valid()) {
        const auto d = c.g.add_multi("batch_norm_train_grad", {c.dy(0), x, c.input(1), c.output(1), c.output(2)}, c.attrs());
        add_dx(d[0]);
        c.set(1, d[1]);
        c.set(2, d[2]);
      }
      // The statistics are outputs too (the moving averages read them; they rarely reach a loss):
      // d mean/dx = 1/M and d var/dx = 2(x − mean)/M, the mean's own dependence cancelling.
      if (c.dy(1).valid()) add_dx(scale(c.g, broadcast_to(c.g, reshape(c.g, c.dy(1), kept), xs), 1.0 / count));
      if (c.dy(2).valid()) {
        const Value centred = sub(c.g, x, reshape(c.g, c.output(1), kept));
        add_dx(scale(c.g, mul(c.g, centred, reshape(c.g, c.dy(2), kept)), 2.0 / count));
      }
      if (dx.valid()) c.set(0, dx);
    });

REGISTER_OP(
    .name = "batch_norm_infer",
    .infer = [](const Attrs& a, const std::vector<TensorType>& in) {
      check_channels(a, in, "batch_norm_infer", kInferNames);
      return one(in[0]);
    },
    .grad = [](GradContext& c) {
      // The moving statistics are not trained: no gradient flows to inputs 3 and 4.
      const auto d = c.g.add_multi("batch_norm_infer_grad", {c.dy(), c.input(0), c.input(1), c.input(3), c.input(4)}, c.attrs());
      c.set(0, d[0]);
      c.set(1, d[1]);
      c.set(2, d[2]);
    });

REGISTER_OP(.name = "batch_norm_train_grad", .infer = infer_grad);
REGISTER_OP(.name = "batch_norm_infer_grad", .infer = infer_grad);

BatchNormTrainResult batch_norm_train(Graph& g, Value x, Value gamma, Value beta, int axis, double epsilon) {
  const auto out = g.add_multi("batch_norm_train", {x, gamma, beta}, {{"axis", int64_t{axis}}, {"epsilon", epsilon}});
  return {out[0], out[1], out[2]};
}

Value batch_norm_infer(Graph& g, Value x, Value gamma, Value beta, Value mean, Value variance, int axis, double epsilon) {
  return g.add("batch_norm_infer", {x, gamma, beta, mean, variance}, {{"axis", int64_t{axis}}, {"epsilon", epsilon}});
}

}  // namespace tandem::ops
