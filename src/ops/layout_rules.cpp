#include "ops/layout_rules.h"

#include <algorithm>

#include "ops/ops.h"

namespace tandem::ops {

namespace {
std::size_t at(int i) { return static_cast<std::size_t>(i); }

// The axis a batch input's split may have: 0, or with `leading` any axis before the last
// `leading` ones that is not the op's own axis.
bool passes(const graph::LayoutQuery& q, const RowsRule& r, const Layout& l, int rank) {
  if (!l.is_split()) return false;
  if (r.axis_attr && normalize_axis(q.node.attrs.i(r.axis_attr), rank, q.node.op.c_str()) == l.axis) return false;
  return l.axis == 0 || (r.leading > 0 && l.axis < rank - r.leading);
}

std::optional<Signature> rows_signature(const graph::LayoutQuery& q, const RowsRule& r) {
  if (r.axis_attr && normalize_axis(q.node.attrs.i(r.axis_attr), q.input_type(0).shape.rank(), q.node.op.c_str()) == 0)
    return std::nullopt;
  const Layout* ref = nullptr;
  int64_t extent = 0;
  for (int i : r.batch_inputs)
    if (at(i) < q.in.size() && passes(q, r, q.in[at(i)], q.input_type(i).shape.rank())) {
      ref = &q.in[at(i)];
      extent = q.input_type(i).shape[ref->axis];
      break;
    }
  if (!ref) return partial_signature(q, r.linear);
  const int axis = ref->axis;
  Signature s{std::vector<Layout>(q.in.size()), std::vector<Layout>(q.node.outputs.size(), *ref)};
  for (int i : r.batch_inputs) {
    if (at(i) >= q.in.size()) continue;  // an optional input that is absent
    const Shape& shape = q.input_type(i).shape;
    if (shape.rank() < std::max({1, r.min_rank, axis + 1}) || shape[axis] != extent) return std::nullopt;
    s.in[at(i)] = *ref;
  }
  for (int o : r.partial_outputs) s.out[at(o)] = Layout::partial();
  for (std::size_t o = 0; o < s.out.size(); ++o) {
    const Shape& shape = q.output_type(static_cast<int>(o)).shape;
    if (s.out[o].is_split() && (shape.rank() <= axis || shape[axis] != extent)) return std::nullopt;
  }
  return s;
}
}  // namespace

std::optional<Signature> partial_signature(const graph::LayoutQuery& q, const LinearIn& linear) {
  for (const std::vector<int>& set : linear) {
    bool fits = true;
    for (std::size_t i = 0; i < q.in.size() && fits; ++i) {
      const bool in_set = std::find(set.begin(), set.end(), static_cast<int>(i)) != set.end();
      fits = in_set ? q.in[i].is_partial() : q.in[i].is_replicated();
    }
    if (fits) return Signature{q.in, std::vector<Layout>(q.node.outputs.size(), Layout::partial())};
  }
  return std::nullopt;
}

LayoutFn rows(RowsRule rule) {
  return [rule = std::move(rule)](const graph::LayoutQuery& q) { return rows_signature(q, rule); };
}

namespace {
// An elementwise op over an input split along a feature axis (tensor parallelism): every input
// that spans that axis of the output (aligned from the right, as NumPy broadcasts) is split the
// same way; inputs broadcast along it are replicated.
std::optional<Signature> features_signature(const graph::LayoutQuery& q, int out_axis, const std::vector<int64_t>& shares) {
  const Shape& out = q.output_type(0).shape;
  Signature s{std::vector<Layout>(q.in.size()), std::vector<Layout>(q.node.outputs.size(), Layout::split(out_axis, shares))};
  for (std::size_t i = 0; i < q.in.size(); ++i) {
    const Shape& shape = q.input_type(static_cast<int>(i)).shape;
    const int axis = out_axis - (out.rank() - shape.rank());
    if (axis >= 0 && shape[axis] == out[out_axis]) s.in[i] = Layout::split(axis, shares);
  }
  for (std::size_t o = 0; o < s.out.size(); ++o)
    if (!(q.output_type(static_cast<int>(o)).shape == out)) return std::nullopt;
  return s;
}

// The output axis of an input's split along a feature (not the batch) axis, or -1.
int feature_split(const graph::LayoutQuery& q, const Layout** split) {
  const int rank = q.output_type(0).shape.rank();
  for (std::size_t i = 0; i < q.in.size(); ++i) {
    if (!q.in[i].is_split()) continue;
    const int axis = q.in[i].axis + rank - q.input_type(static_cast<int>(i)).shape.rank();
    if (axis > 0) {
      *split = &q.in[i];
      return axis;
    }
  }
  return -1;
}
}  // namespace

LayoutFn elementwise(LinearIn linear) {
  return [linear = std::move(linear)](const graph::LayoutQuery& q) {
    const Shape& out = q.output_type(0).shape;
    const Layout* split = nullptr;
    if (const int axis = feature_split(q, &split); axis > 0 && out[axis] > 1) return features_signature(q, axis, split->shares);
    RowsRule rule{{}, {}, linear};
    if (out.rank() >= 1 && out[0] > 1)
      for (int i = 0; i < static_cast<int>(q.in.size()); ++i) {
        const Shape& s = q.input_type(i).shape;
        if (s.rank() == out.rank() && s[0] == out[0]) rule.batch_inputs.push_back(i);
      }
    return rows_signature(q, rule);
  };
}

LinearIn linear_in_input0() { return {{0}}; }

LocalizeFn local_batch_extent(const char* key) {
  return [key](graph::Attrs& attrs, const Signature& sig, int position) {
    const Layout& out = sig.out[0];
    if (!out.is_split()) return;
    std::vector<int64_t> dims = attrs.ints(key);
    dims[at(out.axis)] = out.shares[at(position)];
    attrs.set(key, std::move(dims));
  };
}

}  // namespace tandem::ops
