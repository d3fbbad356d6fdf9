// integer_lookup: a table lookup on integer ids (IntegerLookup). Integer-valued: gradients stop here.
#include <algorithm>
#include <string>

#include "ops/layout_rules.h"
#include "ops/lookup.h"
#include "ops/ops.h"
#include "tandem/errors.h"

namespace tandem::ops {

REGISTER_OP(
    .name = "integer_lookup",
    .infer = [](const Attrs& a, const std::vector<TensorType>& in) {
      if (in[0].dtype != DType::I32 && in[0].dtype != DType::I64)
        throw ShapeError(std::string("integer_lookup: expected integer ids (int32 or int64), got ") + dtype_name(in[0].dtype));
      if (a.ints("keys").size() != a.ints("values").size()) throw ShapeError("integer_lookup: keys and values differ in length");
      return one({in[0].shape, DType::I64});
    },
    .zero_grad = true, .layout = rows({.batch_inputs = {0}}));

Value integer_lookup(Graph& g, Value ids, const IntegerTable& t) {
  if (!std::is_sorted(t.keys.begin(), t.keys.end()) || std::adjacent_find(t.keys.begin(), t.keys.end()) != t.keys.end())
    throw ValueError("integer_lookup: the keys must be sorted and unique");
  return g.add("integer_lookup", {ids},
               {{"keys", t.keys}, {"values", t.values}, {"missing", t.missing}, {"buckets", t.buckets}, {"bucket_start", t.bucket_start},
                {"has_mask", static_cast<int64_t>(t.has_mask)}, {"mask_key", t.mask_key}, {"mask_value", t.mask_value}});
}

IntegerTable integer_table(const Attrs& a) {
  return {a.ints("keys"), a.ints("values"), a.i("missing"), a.i("buckets"), a.i("bucket_start"), a.i("has_mask") != 0, a.i("mask_key"),
          a.i("mask_value")};
}

}  // namespace tandem::ops
