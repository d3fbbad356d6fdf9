// apply_constraint on the CPU: each group of the weight rescaled in place (backend/constraint_math.h,
// shared with the CUDA kernel), groups one after another.
#include "backend/constraint_math.h"
#include "backend/cpu/kernel_util.h"

namespace tandem::backend::cpu {

namespace {
template <class T>
KernelFn make_apply_constraint(const KernelInit& k) {
  T* w = static_cast<T*>(k.in[0]);
  const ConstraintGeometry g = constraint_geometry(k.in_types[0].shape, k.node.attrs.ints("axes"));
  const auto kind = static_cast<ConstraintKind>(k.node.attrs.i("kind"));
  const T min_value = T(k.node.attrs.f("min_value", 0.0)), max_value = T(k.node.attrs.f("max_value", 0.0)),
          rate = T(k.node.attrs.f("rate", 1.0));
  return [=] {
    if (kind == ConstraintKind::NonNeg) {  // elementwise: one group of everything
      for (int64_t i = 0; i < g.groups * g.per_group; ++i) w[i] = w[i] < T(0) ? T(0) : w[i];
      return;
    }
    for (int64_t group = 0; group < g.groups; ++group) constrain_group(w, g, group, kind, min_value, max_value, rate);
  };
}
}  // namespace

REGISTER_CPU_FLOAT_KERNEL("apply_constraint", make_apply_constraint);

}  // namespace tandem::backend::cpu
