// layer_norm and its gradient over the last axis (rows of n elements) on CUDA devices. As on the
// CPU, row statistics are taken in double with two passes, and dgamma and dbeta are summed over
// fixed chunks of rows whose partials are then combined in chunk order, so the result does not
// depend on scheduling.
#include <cmath>

#include "backend/cuda/reduction.cuh"
#include "tandem/errors.h"

namespace tandem::backend::cuda {

namespace {
struct RowStats {
  double mean, rstd;  // rstd = 1/sqrt(var + ε), var biased
};

template <class Group, class T>
__device__ RowStats row_stats(const T* x, int64_t n, double eps) {
  const double mean = line_reduce<Group>(n, 0.0, Plus{}, [&](int64_t j) { return double(x[j]); }) / double(n);
  const double var = line_reduce<Group>(n, 0.0, Plus{}, [&](int64_t j) {
    const double d = double(x[j]) - mean;
    return d * d;
  });
  return {mean, 1.0 / std::sqrt(var / double(n) + eps)};
}

template <class Group, class T>
__global__ void layer_norm_kernel(T* y, const T* x, const T* gamma, const T* beta, AxisLines rows, double eps) {
  const int64_t n = rows.n;
  for (int64_t r = Group::first_line(); r < rows.count(); r += Group::line_stride()) {
    const T* xr = x + r * n;
    T* yr = y + r * n;
    const RowStats s = row_stats<Group>(xr, n, eps);
    for (int64_t j = Group::lane(); j < n; j += Group::kThreads)
      yr[j] = T((double(xr[j]) - s.mean) * s.rstd * double(gamma[j]) + double(beta[j]));
  }
}

template <class T>
KernelFn make_layer_norm(const KernelInit& k) {
  const LineLaunch shape(AxisLines::rows(k.in_types[0].shape), context(k));
  const double eps = k.node.attrs.f("epsilon");
  const T *x = in<T>(k, 0), *gamma = in<T>(k, 1), *beta = in<T>(k, 2);
  T* y = out<T>(k);
  const AxisLines rows = shape.lines;
  return line_kernel(k, shape, [=](auto group, unsigned grid, cudaStream_t s) {
    layer_norm_kernel<decltype(group)><<<grid, kBlock, 0, s>>>(y, x, gamma, beta, rows, eps);
  });
}

// One block per chunk of rows. Per row, with x̂ = (x − mean)·r and g = dy·γ:
// dx = r·(g − mean(g) − x̂·mean(g·x̂)). The chunk's Σ dy·x̂ and Σ dy per column go to its own
// 2n doubles of `partial`; column j's belong to the thread that handles j in every row.
template <class T>
__global__ void layer_norm_grad_kernel(T* dx, double* partial, const T* dy, const T* x, const T* gamma, int64_t rows, int64_t n,
                                       int64_t rows_per_chunk, double eps) {
  using Block = LineGroup<kBlock>;
  double* pg = partial + int64_t(blockIdx.x) * 2 * n;
  double* pb = pg + n;
  for (int64_t j = threadIdx.x; j < n; j += kBlock) pg[j] = 0, pb[j] = 0;
  const int64_t begin = int64_t(blockIdx.x) * rows_per_chunk;
  const int64_t end = begin + rows_per_chunk < rows ? begin + rows_per_chunk : rows;
  for (int64_t r = begin; r < end; ++r) {
    const T *xr = x + r * n, *dyr = dy + r * n;
    T* dxr = dx + r * n;
    const RowStats s = row_stats<Block>(xr, n, eps);
    double sum_g = 0, sum_gx = 0;
    for (int64_t j = threadIdx.x; j < n; j += kBlock) {
      const double xhat = (double(xr[j]) - s.mean) * s.rstd, d = double(dyr[j]), g = d * double(gamma[j]);
      sum_g += g;
      sum_gx += g * xhat;
      pg[j] += d * xhat;
      pb[j] += d;
    }
    const double mg = block_reduce(sum_g, Plus{}) / double(n), mgx = block_reduce(sum_gx, Plus{}) / double(n);
    for (int64_t j = threadIdx.x; j < n; j += kBlock) {
      const double xhat = (double(xr[j]) - s.mean) * s.rstd;
      dxr[j] = T(s.rstd * (double(dyr[j]) * double(gamma[j]) - mg - xhat * mgx));
    }
  }
}

// dgamma[j] and dbeta[j]: column j's chunk partials, added in chunk order.
template <class T>
__global__ void layer_norm_param_grad_kernel(T* dgamma, T* dbeta, const double* partial, int64_t chunks, int64_t n) {
  TANDEM_CUDA_LOOP(j, n) {
    double g = 0, b = 0;
    for (int64_t c = 0; c < chunks; ++c) g += partial[c * 2 * n + j], b += partial[c * 2 * n + n + j];
    dgamma[j] = T(g);
    dbeta[j] = T(b);
  }
}

// (dy, x, gamma) -> (dx, dgamma, dbeta). The partials live in the device's workspace: kernels on
// the compute stream run one at a time, and this one is done with it when its last launch ends.
template <class T>
KernelFn make_layer_norm_grad(const KernelInit& k) {
  const AxisLines shape = AxisLines::rows(k.in_types[1].shape);
  const int64_t rows = shape.count(), n = shape.n;
  const double eps = k.node.attrs.f("epsilon");
  const T *dy = in<T>(k, 0), *x = in<T>(k, 1), *gamma = in<T>(k, 2);
  T *dx = out<T>(k, 0), *dgamma = out<T>(k, 1), *dbeta = out<T>(k, 2);
  const Context& ctx = context(k);
  const int64_t chunk_bytes = 2 * n * int64_t(sizeof(double));
  const int64_t chunks_that_fit = chunk_bytes > 0 ? int64_t(ctx.workspace_bytes) / chunk_bytes : 0;
  if (rows > 0 && chunks_that_fit < 1)
    throw Error(kernel_label(k) + ": rows of " + std::to_string(n) + " elements need more than the device's " +
                std::to_string(ctx.workspace_bytes) + "-byte workspace for their dgamma and dbeta partials");
  // A few chunks per SM keep every SM busy; fewer partials mean a shorter final sum.
  int64_t chunks = int64_t(ctx.sm_count > 0 ? ctx.sm_count : 1) * 4;
  chunks = chunks < rows ? chunks : rows;
  chunks = chunks < chunks_that_fit ? chunks : chunks_that_fit;
  const int64_t rows_per_chunk = chunks > 0 ? (rows + chunks - 1) / chunks : 1;
  if (chunks > 0) chunks = (rows + rows_per_chunk - 1) / rows_per_chunk;  // no empty chunk
  double* partial = static_cast<double*>(ctx.workspace);
  const unsigned column_grid = blocks_for(n, ctx);
  cudaStream_t s = ctx.stream;
  const std::string label = kernel_label(k);
  return [=] {
    if (chunks > 0) {
      layer_norm_grad_kernel<<<static_cast<unsigned>(chunks), kBlock, 0, s>>>(dx, partial, dy, x, gamma, rows, n, rows_per_chunk, eps);
      check_launch(label);
    }
    if (n == 0) return;
    layer_norm_param_grad_kernel<<<column_grid, kBlock, 0, s>>>(dgamma, dbeta, partial, chunks, n);
    check_launch(label);
  };
}
}  // namespace

REGISTER_CUDA_FLOAT_KERNEL("layer_norm", make_layer_norm);
REGISTER_CUDA_FLOAT_KERNEL("layer_norm_grad", make_layer_norm_grad);

}  // namespace tandem::backend::cuda
