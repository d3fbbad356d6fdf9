// lstm and lstm_grad on the CPU (ops/recurrent.h defines them): a loop over the steps, each one
// recurrent GEMM (backend/cpu/recurrent.h) and an elementwise pass over the batch rows. The
// backward pass runs the steps in reverse with dh·Uᵀ per step and sums dU in one GEMM at the end.
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

constexpr int kGates = 4;    // i, f, c, o
constexpr int kReserve = 6;  // i, f, g, o, c_s, h_{s−1}

// (xw, h0, c0, recurrent_kernel, mask [, recurrent_scale]) -> (y, h, c, reserve)
template <class T>
KernelFn make_lstm(const KernelInit& k) {
  const Loop l(k, k.in_types[0], kGates);
  const T *xw = in<T>(k, 0), *h0 = in<T>(k, 1), *c0 = in<T>(k, 2), *u = in<T>(k, 3), *mask = in<T>(k, 4);
  const T* scale = k.in.size() == 6 ? in<T>(k, 5) : nullptr;
  T *y = out<T>(k, 0), *h = out<T>(k, 1), *c = out<T>(k, 2), *reserve = out<T>(k, 3);
  const auto rec = std::make_shared<Recurrence<T>>(l.batch, l.units, kGates, 0, kGates, scale);
  const auto product = std::make_shared<std::vector<T>>(static_cast<std::size_t>(rec->size()));
  Context* ctx = &context(k);
  return [=] {
    const int64_t B = l.batch, S = l.steps, H = l.units, rs = rec->row_stride(), gs = rec->gate_stride();
    // The outputs h and c hold the running state: each element reads its own h_{s−1}, c_{s−1}
    // before writing h_s, c_s, and the step's GEMM has read all of h before.
    std::copy(h0, h0 + B * H, h);
    std::copy(c0, c0 + B * H, c);
    rec->prepare(u);
    T* z = product->data();
    recurrent::with_activations(l, [&](auto act, auto ract) {
      for (int64_t s = 0; s < S; ++s) {
        rec->forward(*ctx, h, z);
        const int64_t t = l.time(s);
        recurrent::for_rows(*ctx, B, kGates * H, [&](int64_t b) {
          T* res = reserve + (b * S + s) * kReserve * H;
          T *yb = y + (b * S + s) * H, *hb = h + b * H, *cb = c + b * H;
          if (!l.runs(mask, b, s)) {  // states carry over; y repeats the previous output (0 before the first)
            std::fill(res, res + kGates * H, T(0));
            std::copy(cb, cb + H, res + 4 * H);
            std::copy(hb, hb + H, res + 5 * H);
            if (l.zero_output_for_mask || s == 0)
              std::fill(yb, yb + H, T(0));
            else
              std::copy(yb - H, yb, yb);
            return;
          }
          const T *x = xw + (b * S + t) * kGates * H, *r = z + b * rs;
          for (int64_t j = 0; j < H; ++j) {
            const T i = ract(x[j] + r[j]), f = ract(x[H + j] + r[gs + j]), g = act(x[2 * H + j] + r[2 * gs + j]),
                    o = ract(x[3 * H + j] + r[3 * gs + j]);
            const T cs = f * cb[j] + i * g, hs = o * act(cs);
            res[j] = i, res[H + j] = f, res[2 * H + j] = g, res[3 * H + j] = o, res[4 * H + j] = cs, res[5 * H + j] = hb[j];
            cb[j] = cs, hb[j] = hs, yb[j] = hs;
          }
        });
      }
    });
  };
}

// (dy, dh, dc, h0, c0, recurrent_kernel, mask, reserve [, recurrent_scale]) -> (dxw, dh0, dc0, drecurrent_kernel)
template <class T>
KernelFn make_lstm_grad(const KernelInit& k) {
  const Loop l(k, k.out_type(0), kGates);
  const T *dy = in<T>(k, 0), *dh = in<T>(k, 1), *dc = in<T>(k, 2), *c0 = in<T>(k, 4), *u = in<T>(k, 5), *mask = in<T>(k, 6),
          *reserve = in<T>(k, 7);
  const T* scale = k.in.size() == 9 ? in<T>(k, 8) : nullptr;
  T *dxw = out<T>(k, 0), *dh0 = out<T>(k, 1), *dc0 = out<T>(k, 2), *du = out<T>(k, 3);
  const auto rec = std::make_shared<Recurrence<T>>(l.batch, l.units, kGates, 0, kGates, scale);
  // Every gate's recurrent input is h_{s−1} (reserve slot 5), scaled per gate where there is a scale.
  const auto kernel_grad = std::make_shared<KernelGrad<T>>(l, kGates, kReserve, std::vector<int>(kGates, 5), scale,
                                                           std::vector<bool>(kGates, true));
  // Per step: dz in the recurrence's layout; and the gradient still owed to y_{s−1} from skipped
  // steps that repeated it (Keras's masked output).
  const auto dz_step = std::make_shared<std::vector<T>>(static_cast<std::size_t>(rec->size()));
  const auto dy_carry = std::make_shared<std::vector<T>>(static_cast<std::size_t>(l.batch * l.units));
  Context* ctx = &context(k);
  return [=] {
    const int64_t B = l.batch, S = l.steps, H = l.units, rs = rec->row_stride(), gs = rec->gate_stride();
    // dh0 and dc0 hold the running gradients of h_s and c_s, carried backwards.
    std::copy(dh, dh + B * H, dh0);
    std::copy(dc, dc + B * H, dc0);
    std::fill(dy_carry->begin(), dy_carry->end(), T(0));
    rec->prepare(u);
    T *dz = dz_step->data(), *carry = dy_carry->data();
    recurrent::with_activations(l, [&](auto act, auto ract) {
      for (int64_t s = S - 1; s >= 0; --s) {
        const int64_t t = l.time(s);
        recurrent::for_rows(*ctx, B, kGates * H, [&](int64_t b) {
          T *dhb = dh0 + b * H, *dcb = dc0 + b * H, *cy = carry + b * H, *dzb = dz + b * rs;
          T* dx = dxw + (b * S + t) * kGates * H;
          const T* dyb = dy + (b * S + s) * H;
          if (!l.runs(mask, b, s)) {  // no gate ran: dh and dc pass through; dy goes on to y_{s−1}
            for (int64_t j = 0; j < H; ++j) {
              cy[j] = l.zero_output_for_mask ? T(0) : cy[j] + dyb[j];
              for (int g = 0; g < kGates; ++g) dzb[g * gs + j] = T(0);
            }
            std::fill(dx, dx + kGates * H, T(0));
            return;
          }
          const T* res = reserve + (b * S + s) * kReserve * H;
          const T* c_prev = s > 0 ? reserve + (b * S + s - 1) * kReserve * H + 4 * H : c0 + b * H;
          for (int64_t j = 0; j < H; ++j) {
            const T i = res[j], f = res[H + j], g = res[2 * H + j], o = res[3 * H + j], ac = act(res[4 * H + j]);
            const T dhs = dhb[j] + dyb[j] + cy[j];
            const T dcs = dcb[j] + derivative(act, dhs * o, ac);
            const T zi = derivative(ract, dcs * g, i), zf = derivative(ract, dcs * c_prev[j], f), zc = derivative(act, dcs * i, g),
                    zo = derivative(ract, dhs * ac, o);
            dzb[j] = dx[j] = zi;
            dzb[gs + j] = dx[H + j] = zf;
            dzb[2 * gs + j] = dx[2 * H + j] = zc;
            dzb[3 * gs + j] = dx[3 * H + j] = zo;
            dcb[j] = dcs * f;
            dhb[j] = T(0);  // h_{s−1} reaches this step's output only through the product: added below
            cy[j] = T(0);   // y_s = h_s does not depend on y_{s−1}
          }
        });
        rec->backward(*ctx, dz, dh0);
      }
    });
    (*kernel_grad)(*ctx, reserve, dxw, du);
  };
}
}  // namespace

REGISTER_CPU_FLOAT_KERNEL("lstm", make_lstm);
REGISTER_CPU_FLOAT_KERNEL("lstm_grad", make_lstm_grad);

}  // namespace tandem::backend::cpu
