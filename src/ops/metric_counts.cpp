// The ops behind the metrics that are not means of per-sample values (Keras's Precision, Recall,
// AUC) and behind top-k accuracy. No gradient flows through them.
#include "ops/layout_rules.h"
#include "ops/ops.h"
#include "tandem/errors.h"

namespace tandem::ops {

// confusion_counts(pred, target [, weight]): over every element, with target != 0 a positive, for
// each threshold t_k the count of positives and of negatives whose prediction is > t_k, then the
// counts of positives and negatives: shape (2T + 2,). With a weight (pred's shape; a mask) each
// element counts its weight, as Keras's sample_weight. One threshold is the attr "threshold";
// T > 1 are Keras's AUC thresholds: −1e-7, i/(T − 1) for i = 1 … T − 2, 1 + 1e-7.
REGISTER_OP(
    .name = "confusion_counts",
    .infer = [](const Attrs& a, const std::vector<TensorType>& in) {
      if (!is_float(in[0].dtype) || in[1] != in[0])
        throw ShapeError("confusion_counts: targets must match the float predictions " + std::string(dtype_name(in[0].dtype)) + " " +
                         in[0].shape.str() + ", got " + dtype_name(in[1].dtype) + " " + in[1].shape.str());
      if (in.size() == 3 && in[2] != in[0])
        throw ShapeError("confusion_counts: weights must match the predictions " + in[0].shape.str() + ", got " + in[2].shape.str());
      return one({Shape{2 * a.i("num_thresholds") + 2}, in[0].dtype});
    },
    .zero_grad = true, .layout = rows({.batch_inputs = {0, 1, 2}, .partial_outputs = {0}}));

// in_top_k(pred (N, C), ids (N,)): 1 where fewer than k classes score above the target class.
REGISTER_OP(
    .name = "in_top_k",
    .infer = [](const Attrs&, const std::vector<TensorType>& in) {
      const Shape& p = in[0].shape;
      if (!is_float(in[0].dtype) || p.rank() != 2 || (in[1].dtype != DType::I32 && in[1].dtype != DType::I64) ||
          in[1].shape != Shape{p[0]})
        throw ShapeError("in_top_k: expected float predictions (batch, classes) and integer class ids (batch,), got " +
                         std::string(dtype_name(in[0].dtype)) + " " + p.str() + " and " + dtype_name(in[1].dtype) + " " + in[1].shape.str());
      return one({Shape{p[0]}, in[0].dtype});
    },
    .zero_grad = true, .layout = rows({.batch_inputs = {0, 1}}));

Value confusion_counts(Graph& g, Value pred, Value target, int64_t num_thresholds, double threshold, Value weight) {
  std::vector<Value> in{pred, target};
  if (weight.valid()) in.push_back(weight);
  return g.add("confusion_counts", in, {{"num_thresholds", num_thresholds}, {"threshold", threshold}});
}
Value in_top_k(Graph& g, Value pred, Value ids, int64_t k) { return g.add("in_top_k", {pred, ids}, {{"k", k}}); }

}  // namespace tandem::ops
