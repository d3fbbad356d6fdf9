// Normalization (Keras 3): (x − mean) / sqrt(variance) with statistics given or computed by adapt()
// over every axis but the kept ones. Adapted statistics are the non-trainable weights mean,
// variance and count (int32, kept at 0 as Keras 3 keeps it, for older files), as Keras saves them.
#include <algorithm>
#include <numeric>

#include "layer_base/call_context.h"
#include "layers/config.h"
#include "layers/fields.h"
#include "ops/attention.h"
#include "ops/ops.h"
#include "tandem/errors.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
struct NormalizationArgs {
  std::vector<int64_t> axis = {-1};
  Json mean, variance;  // null: adapted; else a number or a (nested) list of numbers, as Keras writes them
  bool invert = false;
  std::string name;
};

// A number or a nested list of numbers: its values (row-major) and its shape ({} for a number).
// Returns false if `j` is neither.
bool flatten(const Json& j, std::vector<double>& values, std::vector<int64_t>& shape, std::size_t depth = 0) {
  if (j.is_number()) {
    values.push_back(j.get<double>());
    return true;
  }
  if (!j.is_array() || j.empty()) return false;
  if (shape.size() == depth) shape.push_back(static_cast<int64_t>(j.size()));
  else if (shape[depth] != static_cast<int64_t>(j.size())) return false;  // ragged
  for (const Json& e : j)
    if (!flatten(e, values, shape, depth + 1) || (e.is_number() && shape.size() != depth + 1)) return false;
  return true;
}

Field<NormalizationArgs> statistic(const char* key, Json NormalizationArgs::*member) {
  return {key, [member](const NormalizationArgs& a) { return a.*member; },
          [key, member](const ConfigReader& c, NormalizationArgs& a) {
            const Json* j = c.value(key);
            if (!j || j->is_null()) return;
            std::vector<double> values;
            std::vector<int64_t> shape;
            if (!flatten(*j, values, shape)) c.fail(key, "null, a number or a (nested) list of numbers");
            a.*member = *j;
          },
          nullptr};
}

const Fields<NormalizationArgs> kFields{
    Field<NormalizationArgs>{"axis", [](const NormalizationArgs& a) { return Json(a.axis); },
                             [](const ConfigReader& c, NormalizationArgs& a) {
                               const Json* j = c.value("axis");
                               if (!j) return;
                               if (j->is_null()) a.axis.clear();  // Keras's None
                               else if (j->is_number_integer()) a.axis = {j->get<int64_t>()};
                               else a.axis = c.integers("axis");
                             },
                             nullptr},
    field<NormalizationArgs>("invert", [](auto& a) -> auto& { return a.invert; }),
    statistic("mean", &NormalizationArgs::mean),
    statistic("variance", &NormalizationArgs::variance),
};

Json statistic_json(const std::vector<double>& v) {
  if (v.empty()) return nullptr;
  if (v.size() == 1) return v[0];
  return Json(v);
}

std::string shape_text(const std::vector<int64_t>& s) { return Shape(s).str(); }

class NormalizationLayer : public Layer {
 public:
  explicit NormalizationLayer(NormalizationArgs a) : Layer("normalization", a.name), args_(std::move(a)) {
    kFields.check(who(), args_);
    if (args_.mean.is_null() != args_.variance.is_null())
      throw ValueError(who() + ": mean and variance must be given together; got " + (args_.mean.is_null() ? "variance" : "mean") + " only");
    if (!args_.mean.is_null()) {
      std::vector<int64_t> variance_shape;
      flatten(args_.mean, mean_values_, mean_shape_);
      flatten(args_.variance, variance_values_, variance_shape);
      if (mean_shape_ != variance_shape)
        throw ValueError(who() + ": mean and variance must have the same shape; got mean " + shape_text(mean_shape_) + " and variance " +
                         shape_text(variance_shape));
      if (mean_shape_.size() > args_.axis.size())
        throw ValueError(who() + ": mean of rank " + std::to_string(mean_shape_.size()) + " for " + std::to_string(args_.axis.size()) +
                         " kept axes; expected a rank of at most the number of axes");
    }
  }
  std::string class_name() const override { return "Normalization"; }
  std::string config_json() const override { return kFields.config_text(*this, args_); }
  bool supports_masking() const override { return true; }

  void build(const std::vector<Shape>& in) override {
    const int64_t ndim = in.at(0).rank() + 1;
    keep_.clear();
    for (int64_t a : args_.axis) {
      if (a < -ndim || a >= ndim)
        throw ValueError(who() + ": axis " + std::to_string(a) + " is out of range for input " + in[0].with_batch(-1).str() +
                         "; expected axes in [" + std::to_string(-ndim) + ", " + std::to_string(ndim) + ")");
      const int64_t k = a < 0 ? a + ndim : a;
      if (k == 0) throw ValueError(who() + ": axis 0 is the batch axis, whose size is not known; keep other axes (or none: axis {})");
      keep_.push_back(k);
    }
    std::sort(keep_.begin(), keep_.end());
    keep_.erase(std::unique(keep_.begin(), keep_.end()), keep_.end());
    input_ = in[0];
    kept_.clear();
    broadcast_.assign(static_cast<std::size_t>(ndim), 1);
    for (int64_t k : keep_) kept_.push_back(in[0][k - 1]), broadcast_[k] = in[0][k - 1];
    if (args_.mean.is_null()) {
      mean_ = add_weight("mean", Shape(kept_), "zeros", false);
      variance_ = add_weight("variance", Shape(kept_), "ones", false);
      count_ = add_weight("count", Shape{}, "zeros", false);
      count_->value() = Tensor(Shape{}, DType::I32);  // Keras's dtype="int", int32 on JAX
      return;
    }
    fixed_mean_ = expand(mean_values_, "mean");
    fixed_variance_ = expand(variance_values_, "variance");
  }

  graph::Value emit(CallContext& ctx, const std::vector<graph::Value>& inputs) override {
    graph::Graph& g = ctx.g;
    const Shape& shape = g.type(inputs[0]).shape;
    for (int64_t k : keep_)
      if (k >= shape.rank() || shape[k] != broadcast_[static_cast<std::size_t>(k)])
        throw ShapeError(who() + ": built for input " + input_.with_batch(-1).str() + " (axis " + std::to_string(k) + " kept), got " +
                         shape.without_batch().with_batch(-1).str());
    const graph::Value x = ops::cast(g, inputs[0], dtype());
    const Shape b(broadcast_);
    const graph::Value mean = mean_ ? ops::reshape(g, ctx.variable(*mean_), b) : constant(g, fixed_mean_, b);
    const graph::Value variance = variance_ ? ops::reshape(g, ctx.variable(*variance_), b) : constant(g, fixed_variance_, b);
    // Keras: max(sqrt(variance), epsilon) with its backend epsilon 1e-7.
    const graph::Value scale = ops::maximum(g, ops::sqrt(g, variance), ops::fill(g, {Shape{}, dtype()}, 1e-7));
    if (args_.invert) return ops::add(g, mean, ops::mul(g, x, scale));
    return ops::div(g, ops::sub(g, x, mean), scale);
  }

  void adapt(const Tensor& data) {
    if (!args_.mean.is_null()) throw ValueError(who() + ": adapt() cannot change the mean and variance given to the layer");
    if (data.shape().rank() < 1 || data.shape()[0] < 1)
      throw ValueError(who() + ": adapt() needs at least one row of data, got shape " + data.shape().str());
    const Shape row = data.shape().without_batch();
    if (!built()) build_for({row});
    if (row != input_)
      throw ShapeError(who() + ": built for rows of shape " + input_.str() + ", adapt() got data of shape " + data.shape().str());
    // Every element's kept index: strides of the full shape, and of the kept shape.
    const std::vector<int64_t> dims = data.shape().dims();
    const int64_t kept_count = Shape(kept_).num_elements();
    std::vector<int64_t> kept_stride(dims.size(), 0);
    for (int64_t s = 1, i = static_cast<int64_t>(keep_.size()) - 1; i >= 0; --i) kept_stride[keep_[i]] = s, s *= kept_[i];
    const Tensor x = data.cast(DType::F64);
    const std::span<const double> v = x.values<double>();
    std::vector<int64_t> where(v.size());
    for (std::size_t e = 0; e < v.size(); ++e) {
      int64_t rest = static_cast<int64_t>(e), k = 0;
      for (int64_t d = static_cast<int64_t>(dims.size()) - 1; d >= 0; --d) k += (rest % dims[d]) * kept_stride[d], rest /= dims[d];
      where[e] = k;
    }
    // Two passes in float64: the mean, then the biased variance around it (Keras's np.var).
    std::vector<double> sum(kept_count, 0.0), squares(kept_count, 0.0);
    for (std::size_t e = 0; e < v.size(); ++e) sum[where[e]] += v[e];
    const double per = static_cast<double>(v.size()) / static_cast<double>(kept_count);
    for (double& s : sum) s /= per;
    for (std::size_t e = 0; e < v.size(); ++e) squares[where[e]] += (v[e] - sum[where[e]]) * (v[e] - sum[where[e]]);
    for (double& s : squares) s /= per;
    const Shape kept(kept_);
    mean_->assign(Tensor::from(kept, std::span<const double>(sum)).cast(mean_->value().dtype()));
    variance_->assign(Tensor::from(kept, std::span<const double>(squares)).cast(variance_->value().dtype()));
  }

 private:
  // The given statistic for every element of the kept shape: its dimensions align with the kept
  // axes from the right and broadcast, as Keras's build does.
  std::vector<double> expand(const std::vector<double>& values, const char* what) const {
    const std::size_t rank = mean_shape_.size(), kept_rank = kept_.size();
    for (std::size_t i = 0; i < rank; ++i) {
      const int64_t have = mean_shape_[rank - 1 - i], want = kept_[kept_rank - 1 - i];
      if (have != 1 && have != want)
        throw ValueError(who() + ": " + what + " of shape " + shape_text(mean_shape_) + " cannot broadcast to the kept axes' shape " +
                         shape_text(kept_));
    }
    const int64_t n = Shape(kept_).num_elements();
    std::vector<double> out(static_cast<std::size_t>(n));
    for (int64_t e = 0; e < n; ++e) {
      int64_t rest = e, src = 0, stride = 1;
      for (std::size_t i = 0; i < kept_rank; ++i) {
        const int64_t idx = rest % kept_[kept_rank - 1 - i];
        rest /= kept_[kept_rank - 1 - i];
        if (i < rank) {
          const int64_t have = mean_shape_[rank - 1 - i];
          src += (have == 1 ? 0 : idx) * stride;
          stride *= have;
        }
      }
      out[static_cast<std::size_t>(e)] = values[static_cast<std::size_t>(src)];
    }
    return out;
  }
  // The values as a graph constant of shape `b`: one fill when they are all equal, else one fill
  // per value joined (given statistics are small: one per channel).
  graph::Value constant(graph::Graph& g, const std::vector<double>& values, const Shape& b) const {
    if (std::all_of(values.begin(), values.end(), [&](double v) { return v == values[0]; }))
      return ops::fill(g, {b, dtype()}, values[0]);
    std::vector<graph::Value> parts;
    for (double v : values) parts.push_back(ops::fill(g, {Shape{1}, dtype()}, v));
    return ops::reshape(g, ops::concat(g, parts, 0), b);
  }

  NormalizationArgs args_;
  std::vector<double> mean_values_, variance_values_, fixed_mean_, fixed_variance_;
  std::vector<int64_t> mean_shape_, keep_, kept_, broadcast_;
  Shape input_;
  VariablePtr mean_, variance_, count_;
};

NormalizationLayer& normalization_of(const LayerRef& ref) {
  auto* layer = dynamic_cast<NormalizationLayer*>(ref.ptr().get());
  if (!layer) throw ValueError(ref->class_name() + " \"" + ref->name() + "\": adapt() is for a Normalization layer");
  return *layer;
}

const RegisterLayer registered("Normalization", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  return std::make_shared<NormalizationLayer>(kFields.read(c, {.name = c.name()}));
});
}  // namespace

void NormalizationRef::adapt(const Tensor& data) const { normalization_of(*this).adapt(data); }

void NormalizationRef::adapt(const Dataset& data) const {
  const std::optional<RowMap>& map = data.x_map(0);
  if (!map) return adapt(data.x());
  const Tensor& x = data.x();
  std::vector<int64_t> dims{x.shape()[0]};
  for (int64_t d : map->row.shape.dims()) dims.push_back(d);
  Tensor mapped{Shape(dims), map->row.dtype};
  const std::size_t in_row = x.shape()[0] ? x.bytes() / static_cast<std::size_t>(x.shape()[0]) : 0, out_row = map->row.bytes();
  for (int64_t r = 0; r < x.shape()[0]; ++r)
    map->apply(static_cast<const std::byte*>(x.raw()) + r * in_row, static_cast<std::byte*>(mapped.raw()) + r * out_row);
  adapt(mapped);
}

NormalizationRef Normalization(const NormalizationOptions& options) {
  NormalizationArgs a{options.axis, statistic_json(options.mean), statistic_json(options.variance), options.invert, options.name};
  return NormalizationRef(std::make_shared<NormalizationLayer>(std::move(a)));
}

}  // namespace tandem::layers
