// concat and slice along one axis. Both view tensors as (outer, axis·inner) rows and move whole
// contiguous runs, so they only depend on the element size and serve every dtype.
#include <cstring>
#include <vector>

#include "backend/cpu/kernel_util.h"
#include "ops/ops.h"

namespace tandem::backend::cpu {

namespace {
// outer = product of dims before `axis`, inner = product after it.
void split_at(const Shape& s, int axis, int64_t& outer, int64_t& inner) {
  outer = inner = 1;
  for (int i = 0; i < s.rank(); ++i) {
    if (i < axis) outer *= s[i];
    if (i > axis) inner *= s[i];
  }
}

KernelFn make_concat(const KernelInit& k) {
  const Shape& os = k.out_type().shape;
  const int axis = ops::normalize_axis(k.node.attrs.i("axis"), os.rank(), "concat");
  int64_t outer, inner;
  split_at(os, axis, outer, inner);
  const std::size_t esize = dtype_size(k.out_type().dtype);
  struct Part {
    const std::byte* src;
    std::size_t bytes;  // one outer row of this input
  };
  std::vector<Part> parts;
  for (std::size_t i = 0; i < k.in.size(); ++i)
    parts.push_back({static_cast<const std::byte*>(k.in[i]), static_cast<std::size_t>(k.in_types[i].shape[axis] * inner) * esize});
  const std::size_t row = static_cast<std::size_t>(os[axis] * inner) * esize;
  std::byte* y = static_cast<std::byte*>(k.out[0]);
  Context* ctx = &context(k);
  const int64_t grain = kElementwiseGrain / static_cast<int64_t>(row / esize + 1) + 1;
  return [=] {
    ctx->parallel_for(outer, grain, [&](int64_t o0, int64_t o1) {
      for (int64_t o = o0; o < o1; ++o) {
        std::byte* dst = y + static_cast<std::size_t>(o) * row;
        for (const Part& p : parts) {
          std::memcpy(dst, p.src + static_cast<std::size_t>(o) * p.bytes, p.bytes);
          dst += p.bytes;
        }
      }
    });
  };
}

KernelFn make_slice(const KernelInit& k) {
  const Shape& is = k.in_types[0].shape;
  const int axis = ops::normalize_axis(k.node.attrs.i("axis"), is.rank(), "slice");
  int64_t outer, inner;
  split_at(is, axis, outer, inner);
  const std::size_t esize = dtype_size(k.out_type().dtype);
  const std::size_t in_row = static_cast<std::size_t>(is[axis] * inner) * esize;
  const std::size_t out_row = static_cast<std::size_t>(k.node.attrs.i("size") * inner) * esize;
  const std::size_t skip = static_cast<std::size_t>(k.node.attrs.i("begin") * inner) * esize;
  const std::byte* x = static_cast<const std::byte*>(k.in[0]);
  std::byte* y = static_cast<std::byte*>(k.out[0]);
  Context* ctx = &context(k);
  const int64_t grain = kElementwiseGrain / static_cast<int64_t>(out_row / esize + 1) + 1;
  return [=] {
    ctx->parallel_for(outer, grain, [&](int64_t o0, int64_t o1) {
      for (int64_t o = o0; o < o1; ++o)
        std::memcpy(y + static_cast<std::size_t>(o) * out_row, x + static_cast<std::size_t>(o) * in_row + skip, out_row);
    });
  };
}
}  // namespace

#define TANDEM_REGISTER_ALL_DTYPES(op, make)                 \
  REGISTER_KERNEL(op, DeviceKind::Cpu, DType::F32, make);    \
  REGISTER_KERNEL(op, DeviceKind::Cpu, DType::F64, make);    \
  REGISTER_KERNEL(op, DeviceKind::Cpu, DType::I32, make);    \
  REGISTER_KERNEL(op, DeviceKind::Cpu, DType::I64, make)

TANDEM_REGISTER_ALL_DTYPES("concat", make_concat);
TANDEM_REGISTER_ALL_DTYPES("slice", make_slice);

}  // namespace tandem::backend::cpu
