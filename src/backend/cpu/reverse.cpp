// reverse along one axis: x viewed as (outer, n, inner) and copied with the middle index mirrored.
#include <cstring>

#include "backend/cpu/kernel_util.h"
#include "ops/ops.h"

namespace tandem::backend::cpu {

namespace {
template <class E>  // an unsigned integer of the element's size: the copy moves bits only
KernelFn make_reverse(const KernelInit& k) {
  const Shape& s = k.in_types[0].shape;
  const int axis = ops::normalize_axis(k.node.attrs.i("axis"), s.rank(), "reverse");
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= s[i];
  for (int i = axis + 1; i < s.rank(); ++i) inner *= s[i];
  const int64_t n = s[axis];
  const E* x = static_cast<const E*>(k.in[0]);
  E* y = static_cast<E*>(k.out[0]);
  Context* ctx = &context(k);
  return [=] {
    ctx->parallel_for(outer * n, kElementwiseGrain / (inner + 1) + 1, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t o = r / n, i = r % n;
        std::memcpy(y + (o * n + (n - 1 - i)) * inner, x + r * inner, static_cast<std::size_t>(inner) * sizeof(E));
      }
    });
  };
}
}  // namespace

REGISTER_KERNEL("reverse", DeviceKind::Cpu, DType::F32, make_reverse<uint32_t>);
REGISTER_KERNEL("reverse", DeviceKind::Cpu, DType::F64, make_reverse<uint64_t>);

}  // namespace tandem::backend::cpu
