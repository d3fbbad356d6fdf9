// Communication nodes that strategies insert. A gradient bucket's all-reduce is split in two:
// all_reduce_start runs as soon as the bucket's gradients exist (eager) and hands them to the
// device's communication thread; all_reduce_wait, placed just before the updates, waits for it
// and yields the reduced gradients in the same buffers.
#include "ops/layout_rules.h"
#include "ops/ops.h"
#include "tandem/errors.h"

namespace tandem::ops {

namespace {
std::vector<TensorType> check_float_inputs(const std::vector<TensorType>& in) {
  for (const TensorType& t : in)
    if (!is_float(t.dtype)) throw ShapeError(std::string("all_reduce: expected float tensors, got ") + dtype_name(t.dtype));
  return in;
}

// Nested lowering (a batch axis over groups that split the model) lowers a device's graph again,
// all-reduce included: each device of a group all-reduces its part, whatever its layout (sums
// of blocks are blocks of the sum; of partial sums, partial sums).
std::optional<Signature> as_they_are(const graph::LayoutQuery& q) { return Signature{q.in, {}}; }
std::optional<Signature> outputs_as_inputs(const graph::LayoutQuery& q) { return Signature{q.in, q.in}; }
}  // namespace

// Their Communication: the bucket (index in the program), whether it averages, its wire type.
REGISTER_OP(
    .name = "all_reduce_start",
    .infer_communication = [](const graph::Communication&, const Attrs&, const std::vector<TensorType>& in) {
      check_float_inputs(in);
      return std::vector<TensorType>{};
    },
    .has_side_effects = true, .eager = true, .contiguous_inputs = true, .layout = as_they_are);

REGISTER_OP(
    .name = "all_reduce_wait",
    .infer_communication = [](const graph::Communication&, const Attrs&, const std::vector<TensorType>& in) {
      return check_float_inputs(in);
    },
    .outputs_alias_inputs = true, .layout = outputs_as_inputs);

// Collectives over the ranks of a strategy's communicator, in the local (per-device) view: every
// device's graph holds the same node, and the communication thread of each device runs it in the
// order its program reaches it, so the ranks meet. Shares are slices along axis 0, equal in size.
// The gradient of a gather is the reduce-scatter of the output's gradient and the reverse: each
// device's slice of the gathered value reaches every device's loss, so its gradient is the sum
// over devices of their gradients for that slice.
namespace {
int64_t ranks_of(const graph::Communication& c, const char* op) {
  if (c.group.empty()) throw ShapeError(std::string(op) + ": its group lists no rank");
  return static_cast<int64_t>(c.group.size());
}

std::vector<TensorType> infer_all_gather(const graph::Communication& c, const Attrs&, const std::vector<TensorType>& in) {
  const int64_t ranks = ranks_of(c, "all_gather");
  if (in[0].shape.rank() < 1) throw ShapeError("all_gather: expected a tensor of rank >= 1 (its rows are gathered), got a scalar");
  return one({in[0].shape.without_batch().with_batch(in[0].shape[0] * ranks), in[0].dtype});
}

std::vector<TensorType> infer_reduce_scatter(const graph::Communication& c, const Attrs&, const std::vector<TensorType>& in) {
  const int64_t ranks = ranks_of(c, "reduce_scatter");
  check_float_inputs(in);
  const Shape& s = in[0].shape;
  if (s.rank() < 1 || s[0] % ranks != 0)
    throw ShapeError("reduce_scatter: expected rows divisible by the " + std::to_string(ranks) + " ranks, got shape " + s.str());
  return one({s.without_batch().with_batch(s[0] / ranks), in[0].dtype});
}

// The same collective over the same group, of the other kind.
void reverse(GradContext& c, graph::Communication::Kind kind) {
  graph::Communication reversed = *c.node().communication;
  reversed.kind = kind;
  c.set(0, c.g.communicate(std::move(reversed), {c.dy()})[0]);
}
}  // namespace

// Output: every rank's input, in rank order along axis 0.
REGISTER_OP(
    .name = "all_gather", .infer_communication = infer_all_gather,
    .grad = [](GradContext& c) { reverse(c, graph::Communication::Kind::ReduceScatter); });

// Output: this rank's rows of the sum over ranks.
REGISTER_OP(
    .name = "reduce_scatter", .infer_communication = infer_reduce_scatter,
    .grad = [](GradContext& c) { reverse(c, graph::Communication::Kind::AllGather); });

// Point to point, with the other rank (the Communication's peer) and a tag that matches a send
// with its recv. send has no outputs; recv's output type is given by its attrs shape and dtype.
// The pair moves the value from one device's memory to another's.
REGISTER_OP(
    .name = "send",
    .infer_communication = [](const graph::Communication&, const Attrs&, const std::vector<TensorType>&) {
      return std::vector<TensorType>{};
    },
    .has_side_effects = true);

REGISTER_OP(
    .name = "recv",
    .infer_communication = [](const graph::Communication&, const Attrs& a, const std::vector<TensorType>& in) {
      if (!in.empty()) throw ShapeError("recv: expected no inputs, got " + std::to_string(in.size()));
      return one({Shape(a.ints("shape")), static_cast<DType>(a.i("dtype"))});
    },
    .has_side_effects = true);

}  // namespace tandem::ops
