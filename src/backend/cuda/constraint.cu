// apply_constraint on CUDA devices: one thread per group of the weight, with the CPU kernel's
// formulas (backend/constraint_math.h), so each group is summed in the same order.
#include "backend/constraint_math.h"
#include "backend/cuda/kernel_util.cuh"

namespace tandem::backend::cuda {

namespace {
template <class T>
__global__ void constraint_kernel(T* w, ConstraintGeometry g, ConstraintKind kind, T min_value, T max_value, T rate) {
  TANDEM_CUDA_LOOP(group, g.groups) constrain_group(w, g, group, kind, min_value, max_value, rate);
}

template <class T>
KernelFn make_apply_constraint(const KernelInit& k) {
  T* w = static_cast<T*>(k.in[0]);
  const ConstraintGeometry g = constraint_geometry(k.in_types[0].shape, k.node.attrs.ints("axes"));
  const auto kind = static_cast<ConstraintKind>(k.node.attrs.i("kind"));
  const T min_value = T(k.node.attrs.f("min_value", 0.0)), max_value = T(k.node.attrs.f("max_value", 0.0)),
          rate = T(k.node.attrs.f("rate", 1.0));
  return launch_over(k, g.groups, [=](unsigned grid, cudaStream_t s) {
    constraint_kernel<<<grid, kBlock, 0, s>>>(w, g, kind, min_value, max_value, rate);
  });
}
}  // namespace

REGISTER_CUDA_FLOAT_KERNEL("apply_constraint", make_apply_constraint);

}  // namespace tandem::backend::cuda
