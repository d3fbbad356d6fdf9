// Per-row losses and their gradients on CUDA devices: cross-entropy (fused with softmax when from
// logits), binary cross-entropy, squared and absolute error. Each row is reduced by one warp or
// block; the per-class terms are backend/loss_math.h's, the CPU kernels' own.
#include <cmath>

#include "backend/cuda/reduction.cuh"
#include "backend/loss_math.h"

namespace tandem::backend::cuda {

namespace {
// Predictions (rows, classes) and their targets, by value in the launch.
template <class T>
struct CeRows {
  const T* pred;
  loss::Target<T> target;
  bool logits;
};

template <class T>
struct CeSetup {
  CeRows<T> rows;
  LineLaunch launch;
  CeSetup(const KernelInit& k, int pred_input)
      : rows{in<T>(k, pred_input),
             {k.in[static_cast<std::size_t>(pred_input + 1)], k.in_types[static_cast<std::size_t>(pred_input + 1)].dtype,
              k.node.attrs.b("sparse"), k.in_types[static_cast<std::size_t>(pred_input)].shape.back()},
             k.node.attrs.b("from_logits")},
        launch(AxisLines::rows(k.in_types[static_cast<std::size_t>(pred_input)].shape), context(k)) {}
};

// A NaN logit makes the row's sum, hence its loss, NaN whether or not it wins the max.
template <class Group, class T>
__global__ void cross_entropy_kernel(T* loss_out, CeRows<T> a, int64_t rows) {
  const int64_t c = a.target.classes;
  for (int64_t r = Group::first_line(); r < rows; r += Group::line_stride()) {
    const T* z = a.pred + r * c;
    T terms;
    if (a.logits) {
      const T mx = line_reduce<Group>(c, minus_infinity<T>(), MaxNanWins{}, [&](int64_t j) { return z[j]; });
      const T sum = line_reduce<Group>(c, T(0), Plus{}, [&](int64_t j) { return std::exp(z[j] - mx); });
      const T lse = mx + std::log(sum);
      terms = line_reduce<Group>(c, T(0), Plus{}, [&](int64_t j) { return loss::ce_logit_term(a.target.at(r, j), z[j], lse); });
    } else {
      const T total = line_reduce<Group>(c, T(0), Plus{}, [&](int64_t j) { return z[j]; });
      terms = line_reduce<Group>(c, T(0), Plus{}, [&](int64_t j) { return loss::ce_probability_term(a.target.at(r, j), z[j], total); });
    }
    if (Group::lane() == 0) loss_out[r] = T(0) - terms;  // 0 − x, as the CPU's running l −= term: +0 for no terms
  }
}

// From logits: dz_j = dy·(Σt·softmax_j − t_j). From probabilities: g_j = dL/dq_j, then through
// the normalisation p = pred/Σpred: dpred_j = dy·(g_j − Σ_i g_i p_i)/Σpred.
template <class Group, class T>
__global__ void cross_entropy_grad_kernel(T* dz, const T* dy, CeRows<T> a, int64_t rows) {
  const int64_t c = a.target.classes;
  for (int64_t r = Group::first_line(); r < rows; r += Group::line_stride()) {
    const T* z = a.pred + r * c;
    T* d = dz + r * c;
    if (a.logits) {
      const T mx = line_reduce<Group>(c, minus_infinity<T>(), MaxNanWins{}, [&](int64_t j) { return z[j]; });
      const T sum = line_reduce<Group>(c, T(0), Plus{}, [&](int64_t j) { return std::exp(z[j] - mx); });
      const T tsum = line_reduce<Group>(c, T(0), Plus{}, [&](int64_t j) { return a.target.at(r, j); });
      for (int64_t j = Group::lane(); j < c; j += Group::kThreads) d[j] = loss::ce_logit_grad(dy[r], a.target.at(r, j), tsum, z[j], mx, sum);
    } else {
      const T total = line_reduce<Group>(c, T(0), Plus{}, [&](int64_t j) { return z[j]; });
      const T gp = line_reduce<Group>(c, T(0), Plus{}, [&](int64_t j) {
        const T p = z[j] / total;
        return loss::ce_probability_grad(a.target.at(r, j), p) * p;
      });
      for (int64_t j = Group::lane(); j < c; j += Group::kThreads)
        d[j] = dy[r] * (loss::ce_probability_grad(a.target.at(r, j), z[j] / total) - gp) / total;
    }
  }
}

template <class T>
KernelFn make_cross_entropy(const KernelInit& k) {
  const CeSetup<T> s(k, 0);
  T* loss_out = out<T>(k);
  const CeRows<T> rows = s.rows;
  const int64_t n_rows = s.launch.lines.count();
  return line_kernel(k, s.launch, [=](auto group, unsigned grid, cudaStream_t st) {
    cross_entropy_kernel<decltype(group)><<<grid, kBlock, 0, st>>>(loss_out, rows, n_rows);
  });
}

// Inputs (dy per row, pred, target).
template <class T>
KernelFn make_cross_entropy_grad(const KernelInit& k) {
  const CeSetup<T> s(k, 1);
  const T* dy = in<T>(k, 0);
  T* dz = out<T>(k);
  const CeRows<T> rows = s.rows;
  const int64_t n_rows = s.launch.lines.count();
  return line_kernel(k, s.launch, [=](auto group, unsigned grid, cudaStream_t st) {
    cross_entropy_grad_kernel<decltype(group)><<<grid, kBlock, 0, st>>>(dz, dy, rows, n_rows);
  });
}

// y[r] = mean over the row's c elements of l.loss(p, t).
template <class Group, class T, class L>
__global__ void rowwise_loss_kernel(T* y, const T* p, const T* t, AxisLines rows, L l) {
  const int64_t c = rows.n;
  for (int64_t r = Group::first_line(); r < rows.count(); r += Group::line_stride()) {
    const T acc = line_reduce<Group>(c, T(0), Plus{}, [&](int64_t j) { return l.template loss<T>(p[r * c + j], t[r * c + j]); });
    if (Group::lane() == 0) y[r] = acc / loss::row_divisor<L, T>(c);
  }
}

// d[i] = dy[row]/c · dl/dp (wrt_pred) or dl/dt.
template <class T, class L>
__global__ void rowwise_grad_kernel(T* d, const T* dy, const T* p, const T* t, int64_t n, int64_t c, bool wrt_pred, L l) {
  TANDEM_CUDA_LOOP(i, n) {
    d[i] = dy[i / c] / loss::row_divisor<L, T>(c) * (wrt_pred ? l.template d_pred<T>(p[i], t[i]) : l.template d_target<T>(p[i], t[i]));
  }
}

template <class T, class L>
KernelFn rowwise_loss(const KernelInit& k, L l) {
  const T* p = in<T>(k, 0);
  const T* t = in<T>(k, 1);
  T* y = out<T>(k);
  const LineLaunch shape(AxisLines::rows(k.in_types[0].shape), context(k));
  const AxisLines rows = shape.lines;
  return line_kernel(k, shape, [=](auto group, unsigned grid, cudaStream_t s) {
    rowwise_loss_kernel<decltype(group)><<<grid, kBlock, 0, s>>>(y, p, t, rows, l);
  });
}

template <class T, class L>
KernelFn rowwise_grad(const KernelInit& k, L l) {
  const T* dy = in<T>(k, 0);
  const T* p = in<T>(k, 1);
  const T* t = in<T>(k, 2);
  T* d = out<T>(k);
  const bool wrt_pred = k.node.attrs.i("wrt") == 0;
  const int64_t n = numel(k.in_types[1]), c = k.in_types[1].shape.back();
  return launch_over(k, n, [=](unsigned grid, cudaStream_t s) { rowwise_grad_kernel<<<grid, kBlock, 0, s>>>(d, dy, p, t, n, c, wrt_pred, l); });
}

template <class T> KernelFn make_bce(const KernelInit& k) { return rowwise_loss<T>(k, loss::Bce{k.node.attrs.b("from_logits")}); }
template <class T> KernelFn make_bce_grad(const KernelInit& k) { return rowwise_grad<T>(k, loss::Bce{k.node.attrs.b("from_logits")}); }
template <class T> KernelFn make_se(const KernelInit& k) { return rowwise_loss<T>(k, loss::Squared{}); }
template <class T> KernelFn make_se_grad(const KernelInit& k) { return rowwise_grad<T>(k, loss::Squared{}); }
template <class T> KernelFn make_ae(const KernelInit& k) { return rowwise_loss<T>(k, loss::Absolute{}); }
template <class T> KernelFn make_ae_grad(const KernelInit& k) { return rowwise_grad<T>(k, loss::Absolute{}); }
template <class T> KernelFn make_huber(const KernelInit& k) { return rowwise_loss<T>(k, loss::Huber{k.node.attrs.f("delta")}); }
template <class T> KernelFn make_huber_grad(const KernelInit& k) { return rowwise_grad<T>(k, loss::Huber{k.node.attrs.f("delta")}); }
template <class T> KernelFn make_log_cosh(const KernelInit& k) { return rowwise_loss<T>(k, loss::LogCosh{}); }
template <class T> KernelFn make_log_cosh_grad(const KernelInit& k) { return rowwise_grad<T>(k, loss::LogCosh{}); }
template <class T> KernelFn make_poisson(const KernelInit& k) { return rowwise_loss<T>(k, loss::Poisson{}); }
template <class T> KernelFn make_poisson_grad(const KernelInit& k) { return rowwise_grad<T>(k, loss::Poisson{}); }
template <class T> KernelFn make_kld(const KernelInit& k) { return rowwise_loss<T>(k, loss::KlDivergence{}); }
template <class T> KernelFn make_kld_grad(const KernelInit& k) { return rowwise_grad<T>(k, loss::KlDivergence{}); }
}  // namespace

REGISTER_CUDA_FLOAT_KERNEL("cross_entropy", make_cross_entropy);
REGISTER_CUDA_FLOAT_KERNEL("cross_entropy_grad", make_cross_entropy_grad);
REGISTER_CUDA_FLOAT_KERNEL("binary_cross_entropy", make_bce);
REGISTER_CUDA_FLOAT_KERNEL("binary_cross_entropy_grad", make_bce_grad);
REGISTER_CUDA_FLOAT_KERNEL("squared_error", make_se);
REGISTER_CUDA_FLOAT_KERNEL("squared_error_grad", make_se_grad);
REGISTER_CUDA_FLOAT_KERNEL("absolute_error", make_ae);
REGISTER_CUDA_FLOAT_KERNEL("absolute_error_grad", make_ae_grad);
REGISTER_CUDA_FLOAT_KERNEL("huber", make_huber);
REGISTER_CUDA_FLOAT_KERNEL("huber_grad", make_huber_grad);
REGISTER_CUDA_FLOAT_KERNEL("log_cosh", make_log_cosh);
REGISTER_CUDA_FLOAT_KERNEL("log_cosh_grad", make_log_cosh_grad);
REGISTER_CUDA_FLOAT_KERNEL("poisson", make_poisson);
REGISTER_CUDA_FLOAT_KERNEL("poisson_grad", make_poisson_grad);
REGISTER_CUDA_FLOAT_KERNEL("kl_divergence", make_kld);
REGISTER_CUDA_FLOAT_KERNEL("kl_divergence_grad", make_kld_grad);

}  // namespace tandem::backend::cuda
