// Per-row losses and their gradients: cross-entropy (fused with softmax when from logits), binary
// cross-entropy, squared and absolute error. Labels were range-checked before training started.
#include <algorithm>
#include <cmath>

#include "backend/cpu/kernel_util.h"
#include "backend/loss_math.h"

namespace tandem::backend::cpu {

namespace {
using loss::Absolute;
using loss::Bce;
using loss::Squared;
using loss::Target;

template <class T>
struct CeSetup {
  const T* pred;
  Target<T> target;
  int64_t rows, classes;
  bool logits;
  CeSetup(const KernelInit& k, int pred_input)
      : pred(in<T>(k, pred_input)),
        target{k.in[static_cast<std::size_t>(pred_input + 1)], k.in_types[static_cast<std::size_t>(pred_input + 1)].dtype,
               k.node.attrs.b("sparse"), k.in_types[static_cast<std::size_t>(pred_input)].shape.back()},
        rows(numel(k.in_types[static_cast<std::size_t>(pred_input)]) / target.classes),
        classes(target.classes),
        logits(k.node.attrs.b("from_logits")) {}
};

template <class T>
KernelFn make_cross_entropy(const KernelInit& k) {
  const CeSetup<T> s(k, 0);
  T* loss = out<T>(k);
  Context* ctx = &context(k);
  return [=] {
    ctx->parallel_for(s.rows, 256, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const T* z = s.pred + r * s.classes;
        T l = 0;
        if (s.logits) {
          // A NaN logit that max_element skips still makes the sum, hence the row's loss, NaN.
          T mx = *std::max_element(z, z + s.classes), sum = 0;
          for (int64_t j = 0; j < s.classes; ++j) sum += std::exp(z[j] - mx);
          const T lse = mx + std::log(sum);
          for (int64_t j = 0; j < s.classes; ++j) l -= loss::ce_logit_term(s.target.at(r, j), z[j], lse);
        } else {
          T total = 0;
          for (int64_t j = 0; j < s.classes; ++j) total += z[j];
          for (int64_t j = 0; j < s.classes; ++j) l -= loss::ce_probability_term(s.target.at(r, j), z[j], total);
        }
        loss[r] = l;
      }
    });
  };
}

// Inputs (dy per row, pred, target). From logits: dz_j = dy·(Σt·softmax_j − t_j).
// From probabilities: dL/dq_j = −t_j/q_j inside the clip range (0 outside), then through the
// normalisation p = pred/Σpred: dpred_j = (g_j − Σ_i g_i p_i)/Σpred.
template <class T>
KernelFn make_cross_entropy_grad(const KernelInit& k) {
  const CeSetup<T> s(k, 1);
  const T* dy = in<T>(k, 0);
  T* dz = out<T>(k);
  Context* ctx = &context(k);
  return [=] {
    ctx->parallel_for(s.rows, 256, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const T* z = s.pred + r * s.classes;
        T* d = dz + r * s.classes;
        if (s.logits) {
          T mx = *std::max_element(z, z + s.classes), sum = 0, tsum = 0;
          for (int64_t j = 0; j < s.classes; ++j) sum += std::exp(z[j] - mx), tsum += s.target.at(r, j);
          for (int64_t j = 0; j < s.classes; ++j) d[j] = loss::ce_logit_grad(dy[r], s.target.at(r, j), tsum, z[j], mx, sum);
        } else {
          T total = 0, gp = 0;
          for (int64_t j = 0; j < s.classes; ++j) total += z[j];
          for (int64_t j = 0; j < s.classes; ++j) {
            const T p = z[j] / total;
            d[j] = loss::ce_probability_grad(s.target.at(r, j), p);
            gp += d[j] * p;
          }
          for (int64_t j = 0; j < s.classes; ++j) d[j] = dy[r] * (d[j] - gp) / total;
        }
      }
    });
  };
}

template <class T, class L>
KernelFn rowwise_loss(const KernelInit& k, L l) {
  const T* p = in<T>(k, 0);
  const T* t = in<T>(k, 1);
  T* y = out<T>(k);
  const int64_t c = k.in_types[0].shape.back(), rows = numel(k.in_types[0]) / c;
  return [=] {
    for (int64_t r = 0; r < rows; ++r) {
      T acc = 0;
      for (int64_t j = 0; j < c; ++j) acc += l.template loss<T>(p[r * c + j], t[r * c + j]);
      y[r] = acc / loss::row_divisor<L, T>(c);
    }
  };
}

template <class T, class L>
KernelFn rowwise_grad(const KernelInit& k, L l) {
  const T* dy = in<T>(k, 0);
  const T* p = in<T>(k, 1);
  const T* t = in<T>(k, 2);
  T* d = out<T>(k);
  const bool wrt_pred = k.node.attrs.i("wrt") == 0;
  const int64_t c = k.in_types[1].shape.back(), rows = numel(k.in_types[1]) / c;
  return [=] {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < c; ++j) {
        const int64_t i = r * c + j;
        d[i] = dy[r] / loss::row_divisor<L, T>(c) * (wrt_pred ? l.template d_pred<T>(p[i], t[i]) : l.template d_target<T>(p[i], t[i]));
      }
  };
}

template <class T> KernelFn make_bce(const KernelInit& k) { return rowwise_loss<T>(k, Bce{k.node.attrs.b("from_logits")}); }
template <class T> KernelFn make_bce_grad(const KernelInit& k) { return rowwise_grad<T>(k, Bce{k.node.attrs.b("from_logits")}); }
template <class T> KernelFn make_se(const KernelInit& k) { return rowwise_loss<T>(k, Squared{}); }
template <class T> KernelFn make_se_grad(const KernelInit& k) { return rowwise_grad<T>(k, Squared{}); }
template <class T> KernelFn make_ae(const KernelInit& k) { return rowwise_loss<T>(k, Absolute{}); }
template <class T> KernelFn make_ae_grad(const KernelInit& k) { return rowwise_grad<T>(k, Absolute{}); }
template <class T> KernelFn make_huber(const KernelInit& k) { return rowwise_loss<T>(k, loss::Huber{k.node.attrs.f("delta")}); }
template <class T> KernelFn make_huber_grad(const KernelInit& k) { return rowwise_grad<T>(k, loss::Huber{k.node.attrs.f("delta")}); }
template <class T> KernelFn make_log_cosh(const KernelInit& k) { return rowwise_loss<T>(k, loss::LogCosh{}); }
template <class T> KernelFn make_log_cosh_grad(const KernelInit& k) { return rowwise_grad<T>(k, loss::LogCosh{}); }
template <class T> KernelFn make_poisson(const KernelInit& k) { return rowwise_loss<T>(k, loss::Poisson{}); }
template <class T> KernelFn make_poisson_grad(const KernelInit& k) { return rowwise_grad<T>(k, loss::Poisson{}); }
template <class T> KernelFn make_kld(const KernelInit& k) { return rowwise_loss<T>(k, loss::KlDivergence{}); }
template <class T> KernelFn make_kld_grad(const KernelInit& k) { return rowwise_grad<T>(k, loss::KlDivergence{}); }
}  // namespace

REGISTER_CPU_FLOAT_KERNEL("cross_entropy", make_cross_entropy);
REGISTER_CPU_FLOAT_KERNEL("cross_entropy_grad", make_cross_entropy_grad);
REGISTER_CPU_FLOAT_KERNEL("binary_cross_entropy", make_bce);
REGISTER_CPU_FLOAT_KERNEL("binary_cross_entropy_grad", make_bce_grad);
REGISTER_CPU_FLOAT_KERNEL("squared_error", make_se);
REGISTER_CPU_FLOAT_KERNEL("squared_error_grad", make_se_grad);
REGISTER_CPU_FLOAT_KERNEL("absolute_error", make_ae);
REGISTER_CPU_FLOAT_KERNEL("absolute_error_grad", make_ae_grad);
REGISTER_CPU_FLOAT_KERNEL("huber", make_huber);
REGISTER_CPU_FLOAT_KERNEL("huber_grad", make_huber_grad);
REGISTER_CPU_FLOAT_KERNEL("log_cosh", make_log_cosh);
REGISTER_CPU_FLOAT_KERNEL("log_cosh_grad", make_log_cosh_grad);
REGISTER_CPU_FLOAT_KERNEL("poisson", make_poisson);
REGISTER_CPU_FLOAT_KERNEL("poisson_grad", make_poisson_grad);
REGISTER_CPU_FLOAT_KERNEL("kl_divergence", make_kld);
REGISTER_CPU_FLOAT_KERNEL("kl_divergence_grad", make_kld_grad);

}  // namespace tandem::backend::cpu
