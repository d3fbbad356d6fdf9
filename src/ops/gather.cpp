// gather (row lookup in a table: what Embedding runs) and its adjoint scatter_add. A device
// holding a block of the table (attrs "first", "vocab") looks up only the ids in its block.
#include "ops/attention.h"
#include "ops/layout_rules.h"
#include "ops/ops.h"
#include "tandem/errors.h"

namespace tandem::ops {

namespace {
bool is_int(DType t) { return t == DType::I32 || t == DType::I64; }

Shape with_feature(const Shape& ids, int64_t d) {
  std::vector<int64_t> dims = ids.dims();
  dims.push_back(d);
  return Shape(dims);
}

std::vector<TensorType> infer_gather(const Attrs&, const std::vector<TensorType>& in) {
  if (!is_float(in[0].dtype) || in[0].shape.rank() != 2)
    throw ShapeError("gather: expected a float table of rank 2 (rows, features), got " + std::string(dtype_name(in[0].dtype)) +
                     " " + in[0].shape.str());
  if (!is_int(in[1].dtype))
    throw ShapeError(std::string("gather: ids must be int32 or int64, got ") + dtype_name(in[1].dtype));
  return one({with_feature(in[1].shape, in[0].shape[1]), in[0].dtype});
}

std::vector<TensorType> infer_scatter_add(const Attrs& a, const std::vector<TensorType>& in) {
  const Shape &u = in[0].shape, &ids = in[1].shape;
  if (!is_float(in[0].dtype)) throw ShapeError("scatter_add: expected float updates");
  if (!is_int(in[1].dtype))
    throw ShapeError(std::string("scatter_add: ids must be int32 or int64, got ") + dtype_name(in[1].dtype));
  if (u.rank() < 1 || with_feature(ids, u.back()) != u)
    throw ShapeError("scatter_add: updates " + u.str() + " must have the ids' shape " + ids.str() + " plus a feature axis");
  const int64_t rows = a.i("rows");
  if (rows <= 0) throw ShapeError("scatter_add: rows must be positive, got " + std::to_string(rows));
  return one({Shape{rows, u.back()}, in[0].dtype});
}
// A table split by rows (the vocabulary over devices): each device looks up the ids in its block
// and writes zeros for the others, so the lookups are partial sums. Otherwise rows of ids give
// rows of the output.
std::optional<Signature> gather_layout(const graph::LayoutQuery& q) {
  if (q.in[0].is_split() && q.in[0].axis == 0) return Signature{{q.in[0], Layout::replicated()}, {Layout::partial()}};
  static const LayoutFn by_rows = rows({.batch_inputs = {1}});
  return by_rows(q);
}

// The device's block of the table: its first row and the whole table's rows (for the id check).
void gather_block(Attrs& attrs, const Signature& sig, int position) {
  const Layout& table = sig.in[0];
  if (!table.is_split()) return;
  int64_t rows = 0;
  for (int64_t s : table.shares) rows += s;
  // On a mesh the outer axes' blocks come first: a block of a block starts within it.
  attrs.set("first", (attrs.has("first") ? attrs.i("first") : 0) + table.offset(position));
  if (!attrs.has("vocab")) attrs.set("vocab", rows);
}
}  // namespace

REGISTER_OP(
    .name = "gather", .infer = infer_gather, .grad = [](GradContext& c) {
      // Only the table is differentiable; ids are integers.
      const int64_t rows = c.input_type(0).shape[0];
      const std::string owner = c.attrs().s("owner");
      c.set(0, scatter_add(c.g, c.dy(), c.input(1), rows, owner));
    }, .layout = gather_layout, .localize = gather_block);

REGISTER_OP(
    .name = "scatter_add", .infer = infer_scatter_add, .grad = [](GradContext& c) {
      const std::string owner = c.attrs().s("owner");
      c.set(0, gather(c.g, c.dy(), c.input(1), owner));
    }, .layout = rows({.batch_inputs = {0, 1}, .partial_outputs = {0}}));

Value gather(Graph& g, Value table, Value ids, const std::string& owner) {
  return g.add("gather", {table, ids}, {{"owner", owner}});
}

Value scatter_add(Graph& g, Value updates, Value ids, int64_t rows, const std::string& owner) {
  return g.add("scatter_add", {updates, ids}, {{"rows", rows}, {"owner", owner}});
}

}  // namespace tandem::ops
