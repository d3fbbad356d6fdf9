// simple_rnn and simple_rnn_grad on the CPU (ops/recurrent.h defines them): h_s = activation(xw_t +
// h_{s−1}·U), one recurrent GEMM per step (backend/cpu/recurrent.h); backward, dh·Uᵀ per step
// and dU in one GEMM at the end.
#include <algorithm>
#include <memory>
#include <vector>

#include "backend/cpu/recurrent.h"

namespace tandem::backend::cpu {

namespace {
using recurrent::KernelGrad;
using recurrent::Loop;
using recurrent::Recurrence;
using recurrent::derivative;

constexpr int kReserve = 2;  // h_s, h_{s−1}

// (xw, h0, recurrent_kernel, mask [, recurrent_scale]) -> (y, h, reserve)
template <class T>
KernelFn make_simple_rnn(const KernelInit& k) {
  const Loop l(k, k.in_types[0], 1);
  const T *xw = in<T>(k, 0), *h0 = in<T>(k, 1), *u = in<T>(k, 2), *mask = in<T>(k, 3);
  const T* scale = k.in.size() == 5 ? in<T>(k, 4) : nullptr;
  T *y = out<T>(k, 0), *h = out<T>(k, 1), *reserve = out<T>(k, 2);
  const auto rec = std::make_shared<Recurrence<T>>(l.batch, l.units, 1, 0, 1, scale);
  const auto product = std::make_shared<std::vector<T>>(static_cast<std::size_t>(rec->size()));
  Context* ctx = &context(k);
  return [=] {
    const int64_t B = l.batch, S = l.steps, H = l.units;
    std::copy(h0, h0 + B * H, h);  // the output h holds the running state
    rec->prepare(u);
    T* z = product->data();  // one gate: (B, H) in either layout
    with_activation(l.activation, [&](auto act) {
      for (int64_t s = 0; s < S; ++s) {
        rec->forward(*ctx, h, z);
        const int64_t t = l.time(s);
        recurrent::for_rows(*ctx, B, H, [&](int64_t b) {
          T *res = reserve + (b * S + s) * kReserve * H, *yb = y + (b * S + s) * H, *hb = h + b * H;
          std::copy(hb, hb + H, res + H);
          if (!l.runs(mask, b, s)) {  // h carries over; y repeats the previous output (0 before the first)
            std::copy(hb, hb + H, res);
            if (l.zero_output_for_mask || s == 0)
              std::fill(yb, yb + H, T(0));
            else
              std::copy(yb - H, yb, yb);
            return;
          }
          const T *x = xw + (b * S + t) * H, *r = z + b * H;
          for (int64_t j = 0; j < H; ++j) res[j] = hb[j] = yb[j] = act(x[j] + r[j]);
        });
      }
    });
  };
}

// (dy, dh, h0, recurrent_kernel, mask, reserve [, recurrent_scale]) -> (dxw, dh0, drecurrent_kernel)
template <class T>
KernelFn make_simple_rnn_grad(const KernelInit& k) {
  const Loop l(k, k.out_type(0), 1);
  const T *dy = in<T>(k, 0), *dh = in<T>(k, 1), *u = in<T>(k, 3), *mask = in<T>(k, 4), *reserve = in<T>(k, 5);
  const T* scale = k.in.size() == 7 ? in<T>(k, 6) : nullptr;
  T *dxw = out<T>(k, 0), *dh0 = out<T>(k, 1), *du = out<T>(k, 2);
  const auto rec = std::make_shared<Recurrence<T>>(l.batch, l.units, 1, 0, 1, scale);
  const auto kernel_grad = std::make_shared<KernelGrad<T>>(l, 1, kReserve, std::vector<int>{1}, scale, std::vector<bool>{true});
  const auto dz_step = std::make_shared<std::vector<T>>(static_cast<std::size_t>(rec->size()));
  // The gradient still owed to y_{s−1} from skipped steps that repeated it (Keras's masked output).
  const auto dy_carry = std::make_shared<std::vector<T>>(static_cast<std::size_t>(l.batch * l.units));
  Context* ctx = &context(k);
  return [=] {
    const int64_t B = l.batch, S = l.steps, H = l.units;
    std::copy(dh, dh + B * H, dh0);  // dh0 holds the running gradient of h_s
    std::fill(dy_carry->begin(), dy_carry->end(), T(0));
    rec->prepare(u);
    T *dz = dz_step->data(), *carry = dy_carry->data();
    with_activation(l.activation, [&](auto act) {
      for (int64_t s = S - 1; s >= 0; --s) {
        const int64_t t = l.time(s);
        recurrent::for_rows(*ctx, B, H, [&](int64_t b) {
          T *dhb = dh0 + b * H, *cy = carry + b * H, *dzb = dz + b * H, *dx = dxw + (b * S + t) * H;
          const T* dyb = dy + (b * S + s) * H;
          if (!l.runs(mask, b, s)) {  // dh passes through; dy goes on to y_{s−1}
            for (int64_t j = 0; j < H; ++j) cy[j] = l.zero_output_for_mask ? T(0) : cy[j] + dyb[j];
            std::fill(dzb, dzb + H, T(0));
            std::fill(dx, dx + H, T(0));
            return;
          }
          const T* hs = reserve + (b * S + s) * kReserve * H;
          for (int64_t j = 0; j < H; ++j) {
            dzb[j] = dx[j] = derivative(act, dhb[j] + dyb[j] + cy[j], hs[j]);
            dhb[j] = T(0);  // h_{s−1} reaches h_s only through the product: added below
            cy[j] = T(0);
          }
        });
        rec->backward(*ctx, dz, dh0);
      }
    });
    (*kernel_grad)(*ctx, reserve, dxw, du);
  };
}
}  // namespace

REGISTER_CPU_FLOAT_KERNEL("simple_rnn", make_simple_rnn);
REGISTER_CPU_FLOAT_KERNEL("simple_rnn_grad", make_simple_rnn_grad);

}  // namespace tandem::backend::cpu
