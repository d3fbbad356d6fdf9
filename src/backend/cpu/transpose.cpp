// transpose: output axes that are consecutive in the input too are merged and size-1 axes dropped,
// so (B,T,N,H) -> (B,N,T,H) becomes a copy of contiguous H-runs. Only the element size matters.
#include <cstring>
#include <vector>

#include "backend/cpu/kernel_util.h"
#include "backend/strided.h"

namespace tandem::backend::cpu {

namespace {
template <class E>  // an unsigned integer of the element's size: the copy moves bits only
KernelFn make_transpose(const KernelInit& k) {
  const Shape& is = k.in_types[0].shape;
  const std::vector<int64_t> perm = k.node.attrs.ints("perm");
  if (numel(k.in_types[0]) == 0) return {};
  const TransposePlan plan(is, perm);
  const std::vector<int64_t>& dims = plan.dims;
  const std::vector<int64_t>& strides = plan.strides;
  const int64_t inner = dims.back(), inner_stride = strides.back();
  const int64_t rows = numel(k.in_types[0]) / inner;
  const E* x = static_cast<const E*>(k.in[0]);
  E* y = static_cast<E*>(k.out[0]);
  Context* ctx = &context(k);
  const int m = static_cast<int>(dims.size()) - 1;  // outer merged axes
  return [=] {
    ctx->parallel_for(rows, kElementwiseGrain / (inner + 1) + 1, [&](int64_t r0, int64_t r1) {
      for (int64_t row = r0; row < r1; ++row) {
        int64_t rem = row, off = 0;
        for (int i = m - 1; i >= 0; --i) {
          off += (rem % dims[static_cast<std::size_t>(i)]) * strides[static_cast<std::size_t>(i)];
          rem /= dims[static_cast<std::size_t>(i)];
        }
        E* dst = y + row * inner;
        const E* src = x + off;
        if (inner_stride == 1) std::memcpy(dst, src, static_cast<std::size_t>(inner) * sizeof(E));
        else
          for (int64_t j = 0; j < inner; ++j) dst[j] = src[j * inner_stride];
      }
    });
  };
}
}  // namespace

REGISTER_KERNEL("transpose", DeviceKind::Cpu, DType::F32, make_transpose<uint32_t>);
REGISTER_KERNEL("transpose", DeviceKind::Cpu, DType::I32, make_transpose<uint32_t>);
REGISTER_KERNEL("transpose", DeviceKind::Cpu, DType::F64, make_transpose<uint64_t>);
REGISTER_KERNEL("transpose", DeviceKind::Cpu, DType::I64, make_transpose<uint64_t>);
REGISTER_KERNEL("transpose", DeviceKind::Cpu, DType::BF16, make_transpose<uint16_t>);
REGISTER_KERNEL("transpose", DeviceKind::Cpu, DType::F16, make_transpose<uint16_t>);

}  // namespace tandem::backend::cpu
