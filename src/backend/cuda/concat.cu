// concat and slice along one axis on CUDA devices. As on the CPU, tensors are viewed as (outer,
// axis·inner) rows; both become one kernel that fills each output row with runs taken side by side
// from up to kMaxParts sources. A concat of more inputs takes one launch per group of kMaxParts,
// so the sources' table always fits in the launch arguments. Only the element size matters.
#include <vector>

#include "backend/cuda/kernel_util.cuh"
#include "ops/ops.h"

namespace tandem::backend::cuda {

namespace {
constexpr int kMaxParts = 16;

// Sources of one launch, by value in its arguments: each gives `width` elements of every output
// row, from rows `row` elements apart.
template <class E>
struct RowParts {
  int count = 0;
  int64_t width = 0;  // the sum of the parts' widths: what this launch fills per output row
  const E* src[kMaxParts] = {};
  int64_t part_width[kMaxParts] = {}, part_row[kMaxParts] = {};
};

// y[o·y_row + c] for c in [0, parts.width): the part holding column c, at its own row o.
template <class E>
__global__ void copy_rows_kernel(E* __restrict__ y, int64_t y_row, int64_t rows, RowParts<E> parts) {
  const int64_t n = rows * parts.width;
  TANDEM_CUDA_LOOP(i, n) {
    const int64_t o = i / parts.width, column = i - o * parts.width;
    int64_t c = column;
    int j = 0;
    while (c >= parts.part_width[j]) c -= parts.part_width[j++];
    y[o * y_row + column] = parts.src[j][o * parts.part_row[j] + c];
  }
}

// outer = product of dims before `axis`, inner = product after it.
void split_at(const Shape& s, int axis, int64_t& outer, int64_t& inner) {
  outer = inner = 1;
  for (int i = 0; i < s.rank(); ++i) {
    if (i < axis) outer *= s[i];
    if (i > axis) inner *= s[i];
  }
}

// One launch: its parts fill every output row from column `dst` on.
template <class E>
struct RowCopy {
  E* dst;
  RowParts<E> parts;
  unsigned grid;
};

template <class E>
KernelFn launch_row_copies(const KernelInit& k, std::vector<RowCopy<E>> copies, int64_t y_row, int64_t rows) {
  if (copies.empty()) return {};
  cudaStream_t s = stream(k);
  const std::string label = kernel_label(k);
  return [=] {
    for (const RowCopy<E>& c : copies) {
      copy_rows_kernel<<<c.grid, kBlock, 0, s>>>(c.dst, y_row, rows, c.parts);
      check_launch(label);
    }
  };
}

template <class E>  // an unsigned integer of the element's size: the copy moves bits only
KernelFn make_concat(const KernelInit& k) {
  const Shape& os = k.out_type().shape;
  const int axis = ops::normalize_axis(k.node.attrs.i("axis"), os.rank(), "concat");
  int64_t outer, inner;
  split_at(os, axis, outer, inner);
  const int64_t row = os[axis] * inner;
  std::vector<RowCopy<E>> copies;
  int64_t offset = 0;
  for (std::size_t i = 0; i < k.in.size(); ++i) {
    const int64_t width = k.in_types[i].shape[axis] * inner;
    if (width == 0) continue;
    if (copies.empty() || copies.back().parts.count == kMaxParts) copies.push_back({static_cast<E*>(k.out[0]) + offset, {}, 0});
    RowParts<E>& p = copies.back().parts;
    p.src[p.count] = static_cast<const E*>(k.in[i]);
    p.part_width[p.count] = p.part_row[p.count] = width;
    ++p.count, p.width += width, offset += width;
  }
  if (outer == 0) copies.clear();
  for (RowCopy<E>& c : copies) c.grid = blocks_for(outer * c.parts.width, context(k));
  return launch_row_copies(k, std::move(copies), row, outer);
}

template <class E>
KernelFn make_slice(const KernelInit& k) {
  const Shape& is = k.in_types[0].shape;
  const int axis = ops::normalize_axis(k.node.attrs.i("axis"), is.rank(), "slice");
  int64_t outer, inner;
  split_at(is, axis, outer, inner);
  const int64_t out_row = k.node.attrs.i("size") * inner;
  std::vector<RowCopy<E>> copies;
  if (outer > 0 && out_row > 0) {
    RowParts<E> p;
    p.count = 1, p.width = out_row;
    p.src[0] = static_cast<const E*>(k.in[0]) + k.node.attrs.i("begin") * inner;
    p.part_width[0] = out_row, p.part_row[0] = is[axis] * inner;
    copies.push_back({static_cast<E*>(k.out[0]), p, blocks_for(outer * out_row, context(k))});
  }
  return launch_row_copies(k, std::move(copies), out_row, outer);
}
}  // namespace

#define TANDEM_REGISTER_CUDA_ALL_DTYPES(op, make)                   \
  REGISTER_KERNEL(op, DeviceKind::Cuda, DType::F32, make<uint32_t>); \
  REGISTER_KERNEL(op, DeviceKind::Cuda, DType::F64, make<uint64_t>); \
  REGISTER_KERNEL(op, DeviceKind::Cuda, DType::I32, make<uint32_t>); \
  REGISTER_KERNEL(op, DeviceKind::Cuda, DType::I64, make<uint64_t>)

TANDEM_REGISTER_CUDA_ALL_DTYPES("concat", make_concat);
TANDEM_REGISTER_CUDA_ALL_DTYPES("slice", make_slice);

}  // namespace tandem::backend::cuda
