// transpose on CUDA devices. As on the CPU, output axes that are consecutive in the input too are
// merged and size-1 axes dropped, so only the element size matters. When the innermost output axis
// is contiguous in the input ((B,T,N,H) -> (B,N,T,H)), each thread copies one element and both
// sides are coalesced; otherwise 32×32 tiles go through shared memory, so that reads run along the
// input's contiguous axis and writes along the output's.
#include <cstdint>
#include <vector>

#include "backend/cuda/kernel_util.cuh"
#include "backend/strided.h"
#include "tandem/errors.h"

namespace tandem::backend::cuda {

namespace {
// The merged output axes, outermost first, each with the input stride it walks. By value in the
// launch arguments.
struct MergedAxes {
  int rank = 0;
  int64_t dims[kMaxRank] = {}, in_strides[kMaxRank] = {};
};

MergedAxes merge_axes(const Shape& is, const std::vector<int64_t>& perm) {
  const TransposePlan plan(is, perm);
  const std::vector<int64_t>& dims = plan.dims;
  const std::vector<int64_t>& strides = plan.strides;
  if (dims.size() > static_cast<std::size_t>(kMaxRank))
    throw Error("transpose of " + is.str() + ": " + std::to_string(dims.size()) + " axes remain after merging, the CUDA kernel handles " +
                std::to_string(kMaxRank));
  MergedAxes m;
  m.rank = static_cast<int>(dims.size());
  for (int i = 0; i < m.rank; ++i) m.dims[i] = dims[static_cast<std::size_t>(i)], m.in_strides[i] = strides[static_cast<std::size_t>(i)];
  return m;
}

// y[i] = x[offset of output element i]. Index is 32-bit when the tensor allows: the divisions are
// most of the work.
template <class E, class Index>
__global__ void transpose_kernel(E* __restrict__ y, const E* __restrict__ x, Index n, MergedAxes axes) {
  for (Index i = Index(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += Index(blockDim.x) * gridDim.x) {
    Index rem = i, off = 0;
    for (int d = axes.rank - 1; d >= 0; --d) {
      const Index dim = static_cast<Index>(axes.dims[d]);
      off += (rem % dim) * static_cast<Index>(axes.in_strides[d]);
      rem /= dim;
    }
    y[i] = x[off];
  }
}

constexpr int kTile = 32, kTileRows = 8;  // a tile and the rows of threads that move it

// The tiled case: the plane of two output axes, `a` (contiguous in the input) and `b` (the
// innermost output axis), over a batch of the other axes.
struct TilePlan {
  int batch_rank = 0;
  int64_t batch_dims[kMaxRank] = {}, batch_in[kMaxRank] = {}, batch_out[kMaxRank] = {};
  int64_t a_size = 0, b_size = 0;
  int64_t b_in_stride = 0, a_out_stride = 0;  // a's input stride and b's output stride are 1
  int64_t a_tiles = 0, b_tiles = 0, tiles = 0;
};

TilePlan tile_plan(const MergedAxes& m) {
  TilePlan t;
  const int last = m.rank - 1;
  int64_t out_stride[kMaxRank];
  out_stride[last] = 1;
  for (int d = last - 1; d >= 0; --d) out_stride[d] = out_stride[d + 1] * m.dims[d + 1];
  int a = 0;
  while (m.in_strides[a] != 1) ++a;  // the input's innermost axis always heads a merged axis
  int64_t batch = 1;
  for (int d = 0; d < last; ++d)
    if (d != a) {
      t.batch_dims[t.batch_rank] = m.dims[d], t.batch_in[t.batch_rank] = m.in_strides[d], t.batch_out[t.batch_rank] = out_stride[d];
      ++t.batch_rank, batch *= m.dims[d];
    }
  t.a_size = m.dims[a], t.b_size = m.dims[last];
  t.b_in_stride = m.in_strides[last], t.a_out_stride = out_stride[a];
  t.a_tiles = (t.a_size + kTile - 1) / kTile, t.b_tiles = (t.b_size + kTile - 1) / kTile;
  t.tiles = batch * t.a_tiles * t.b_tiles;
  return t;
}

template <class E>
__global__ void transpose_tiled_kernel(E* __restrict__ y, const E* __restrict__ x, TilePlan t) {
  __shared__ E tile[kTile][kTile + 1];  // +1: the column reads hit distinct banks
  const int tx = threadIdx.x, ty = threadIdx.y;
  for (int64_t tile_index = blockIdx.x; tile_index < t.tiles; tile_index += gridDim.x) {
    const int64_t b0 = (tile_index % t.b_tiles) * kTile;
    int64_t rest = tile_index / t.b_tiles;
    const int64_t a0 = (rest % t.a_tiles) * kTile;
    rest /= t.a_tiles;
    int64_t in_base = 0, out_base = 0;
    for (int d = t.batch_rank - 1; d >= 0; --d) {
      const int64_t c = rest % t.batch_dims[d];
      rest /= t.batch_dims[d];
      in_base += c * t.batch_in[d], out_base += c * t.batch_out[d];
    }
    // Read along a (contiguous in x), write along b (contiguous in y).
    for (int r = ty; r < kTile; r += kTileRows) {
      const int64_t a = a0 + tx, b = b0 + r;
      if (a < t.a_size && b < t.b_size) tile[r][tx] = x[in_base + a + b * t.b_in_stride];
    }
    __syncthreads();
    for (int r = ty; r < kTile; r += kTileRows) {
      const int64_t a = a0 + r, b = b0 + tx;
      if (a < t.a_size && b < t.b_size) y[out_base + a * t.a_out_stride + b] = tile[tx][r];
    }
    __syncthreads();  // before the next tile overwrites this one
  }
}

template <class E>  // an unsigned integer of the element's size: the copy moves bits only
KernelFn make_transpose(const KernelInit& k) {
  const int64_t n = numel(k.in_types[0]);
  if (n == 0) return {};
  const MergedAxes axes = merge_axes(k.in_types[0].shape, k.node.attrs.ints("perm"));
  const E* x = static_cast<const E*>(k.in[0]);
  E* y = static_cast<E*>(k.out[0]);
  const Context& c = context(k);
  cudaStream_t s = stream(k);
  const std::string label = kernel_label(k);
  if (axes.in_strides[axes.rank - 1] != 1) {
    const TilePlan plan = tile_plan(axes);
    const int64_t cap = int64_t(c.sm_count > 0 ? c.sm_count : 1) * 16;
    const unsigned grid = static_cast<unsigned>(plan.tiles < cap ? plan.tiles : cap);
    return [=] {
      transpose_tiled_kernel<<<grid, dim3(kTile, kTileRows), 0, s>>>(y, x, plan);
      check_launch(label);
    };
  }
  const unsigned grid = blocks_for(n, c);
  if (n <= INT32_MAX)
    return [=] {
      transpose_kernel<E, uint32_t><<<grid, kBlock, 0, s>>>(y, x, static_cast<uint32_t>(n), axes);
      check_launch(label);
    };
  return [=] {
    transpose_kernel<E, int64_t><<<grid, kBlock, 0, s>>>(y, x, n, axes);
    check_launch(label);
  };
}
}  // namespace

REGISTER_KERNEL("transpose", DeviceKind::Cuda, DType::F32, make_transpose<uint32_t>);
REGISTER_KERNEL("transpose", DeviceKind::Cuda, DType::I32, make_transpose<uint32_t>);
REGISTER_KERNEL("transpose", DeviceKind::Cuda, DType::F64, make_transpose<uint64_t>);
REGISTER_KERNEL("transpose", DeviceKind::Cuda, DType::I64, make_transpose<uint64_t>);
REGISTER_KERNEL("transpose", DeviceKind::Cuda, DType::BF16, make_transpose<uint16_t>);
REGISTER_KERNEL("transpose", DeviceKind::Cuda, DType::F16, make_transpose<uint16_t>);

}  // namespace tandem::backend::cuda
