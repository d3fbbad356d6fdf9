// reduce_sum, reduce_mean and reduce_max over any axes on CUDA devices. Each output element is
// reduced by one thread, one warp or one block, chosen from the shapes, so the order of the sum
// is fixed by the plan.
#include <limits>

#include "backend/cuda/reduction.cuh"
#include "backend/strided.h"
#include "ops/ops.h"

namespace tandem::backend::cuda {

namespace {
// A ReducePlan split into the kept axes (which number the outputs) and the reduced ones (which
// number the elements of one output), each with its input strides, by value in the launch.
struct DeviceReduce {
  int kept_rank = 0, reduced_rank = 0;
  int64_t kept_dims[kMaxRank] = {}, kept_strides[kMaxRank] = {};
  int64_t reduced_dims[kMaxRank] = {}, reduced_strides[kMaxRank] = {};
  int64_t reduced_count = 1;
  explicit DeviceReduce(const ReducePlan& p) {
    const int rank = static_cast<int>(p.dims.size());
    int64_t input_strides[kMaxRank] = {}, stride = 1;
    for (int d = rank - 1; d >= 0; --d) input_strides[d] = stride, stride *= p.dims[static_cast<std::size_t>(d)];
    for (int d = 0; d < rank; ++d) {
      const int64_t dim = p.dims[static_cast<std::size_t>(d)];
      if (p.out_strides[static_cast<std::size_t>(d)] != 0) {
        kept_dims[kept_rank] = dim, kept_strides[kept_rank++] = input_strides[d];
      } else {
        reduced_dims[reduced_rank] = dim, reduced_strides[reduced_rank++] = input_strides[d];
        reduced_count *= dim;
      }
    }
  }
  // Input offset of row-major index i over (dims, strides); rank 1 needs no division.
  __device__ static int64_t offset(int64_t i, const int64_t* dims, const int64_t* strides, int rank) {
    if (rank == 0) return 0;
    int64_t off = 0;
    for (int d = rank - 1; d > 0; --d) off += (i % dims[d]) * strides[d], i /= dims[d];
    return off + i * strides[0];
  }
  __device__ int64_t output_base(int64_t o) const { return offset(o, kept_dims, kept_strides, kept_rank); }
  __device__ int64_t element(int64_t r) const { return offset(r, reduced_dims, reduced_strides, reduced_rank); }
};

// y[o] = scale · op over output o's elements, starting from `init` (0, or −∞ for max). scale is
// reduce_mean's factor, 1 otherwise (exact).
template <class Group, class T, class Op>
__global__ void reduce_kernel(T* y, const T* x, int64_t n_out, DeviceReduce plan, Op op, T init, T scale) {
  for (int64_t o = Group::first_line(); o < n_out; o += Group::line_stride()) {
    const T* base = x + plan.output_base(o);
    const T acc = line_reduce<Group>(plan.reduced_count, init, op, [&](int64_t r) { return base[plan.element(r)]; });
    if (Group::lane() == 0) y[o] = acc * scale;
  }
}

// Where an output's elements are adjacent, a warp (a block for long reductions, a thread for
// very short ones) reads them together. Otherwise adjacent outputs read adjacent elements, so a thread per output reads
// coalesced, unless a few long outputs would leave the GPU idle (column sums over a big batch):
// then a block per output.
int threads_per_output(const DeviceReduce& d, const ReducePlan& p, const Context& c) {
  const bool long_reduction = d.reduced_count > 1024;
  const bool adjacent_elements = !p.dims.empty() && p.out_strides.back() == 0;  // the innermost axis is reduced
  if (adjacent_elements) return long_reduction ? kBlock : d.reduced_count >= 32 ? 32 : 1;
  const bool few_outputs = p.out_count < int64_t(c.sm_count > 0 ? c.sm_count : 1) * kBlock;
  return few_outputs && long_reduction ? kBlock : 1;
}

template <class T, class Op>
KernelFn make_reduce_like(const KernelInit& k, Op op, T init, bool mean) {
  std::vector<int64_t> axes;
  for (int64_t a : k.node.attrs.ints("axes")) axes.push_back(ops::normalize_axis(a, k.in_types[0].shape.rank(), k.node.op.c_str()));
  const ReducePlan plan(k.in_types[0].shape, axes);
  const DeviceReduce device_plan(plan);
  // The CPU kernel's factor, rounded the same way.
  const T scale = mean ? T(plan.out_count) / T(plan.in_count > 1 ? plan.in_count : 1) : T(1);
  const T* x = in<T>(k, 0);
  T* y = out<T>(k);
  const int64_t n_out = plan.out_count;
  // Line o is output o, its elements the reduced ones.
  const LineLaunch shape(AxisLines(n_out, device_plan.reduced_count, 1), threads_per_output(device_plan, plan, context(k)), context(k));
  return line_kernel(k, shape, [=](auto group, unsigned grid, cudaStream_t s) {
    reduce_kernel<decltype(group)><<<grid, kBlock, 0, s>>>(y, x, n_out, device_plan, op, init, scale);
  });
}

template <class T> KernelFn make_sum(const KernelInit& k) { return make_reduce_like<T>(k, Plus{}, T(0), false); }
template <class T> KernelFn make_mean(const KernelInit& k) { return make_reduce_like<T>(k, Plus{}, T(0), true); }
template <class T>
KernelFn make_max(const KernelInit& k) {
  return make_reduce_like<T>(k, MaxNanWins{}, -std::numeric_limits<T>::infinity(), false);
}
}  // namespace

REGISTER_CUDA_FLOAT_KERNEL("reduce_sum", make_sum);
REGISTER_CUDA_FLOAT_KERNEL("reduce_mean", make_mean);
REGISTER_CUDA_FLOAT_KERNEL("reduce_max", make_max);

}  // namespace tandem::backend::cuda
