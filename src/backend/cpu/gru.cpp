// gru and gru_grad on the CPU (ops/recurrent.h defines them), both of Keras's variants:
// reset_after (the default, cuDNN's): one recurrent GEMM per step, the reset gate applied to the
// h gate's recurrent product; otherwise the reset gate scales h_{s−1} before it meets U_h, so a
// step is a GEMM for the z and r gates, an elementwise pass, a GEMM for the h gate and a second
// pass. Backward runs the steps in reverse with the same GEMMs transposed and sums dU in one GEMM
// (per gate where the gates' recurrent inputs differ) at the end.
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

constexpr int kGates = 3;    // z, r, h
constexpr int kReserve = 5;  // z, r, hh, a, h_{s−1}

// The recurrent products of one node: all three gates (reset_after), or the z and r gates and,
// separately, the h gate (on a = r·h_{s−1}, which its pass scales itself).
template <class T>
struct Products {
  Products(const Loop& l, bool reset_after, const T* scale)
      : zr(l.batch, l.units, kGates, 0, reset_after ? 3 : 2, scale), h(l.batch, l.units, kGates, 2, 1, nullptr),
        zr_out(static_cast<std::size_t>(zr.size())), h_in(static_cast<std::size_t>(l.batch * l.units)),
        h_out(static_cast<std::size_t>(l.batch * l.units)) {}
  Recurrence<T> zr, h;
  std::vector<T> zr_out, h_in, h_out;
};

// The h gate's recurrent_scale at (b, j), or 1.
template <class T>
T h_scale(const T* scale, int64_t b, int64_t units, int64_t j) { return scale ? scale[(b * kGates + 2) * units + j] : T(1); }

// (xw, h0, recurrent_kernel, recurrent_bias, mask [, recurrent_scale]) -> (y, h, reserve)
template <class T>
KernelFn make_gru(const KernelInit& k) {
  const Loop l(k, k.in_types[0], kGates);
  const bool reset_after = k.node.attrs.b("reset_after");
  const T *xw = in<T>(k, 0), *h0 = in<T>(k, 1), *u = in<T>(k, 2), *rb = in<T>(k, 3), *mask = in<T>(k, 4);
  const T* scale = k.in.size() == 6 ? in<T>(k, 5) : nullptr;
  T *y = out<T>(k, 0), *h = out<T>(k, 1), *reserve = out<T>(k, 2);
  const auto p = std::make_shared<Products<T>>(l, reset_after, scale);
  Context* ctx = &context(k);
  return [=] {
    const int64_t B = l.batch, S = l.steps, H = l.units, rs = p->zr.row_stride(), gs = p->zr.gate_stride();
    std::copy(h0, h0 + B * H, h);  // the output h holds the running state
    p->zr.prepare(u);
    if (!reset_after) p->h.prepare(u);
    T *z = p->zr_out.data(), *a_in = p->h_in.data(), *zh = p->h_out.data();
    recurrent::with_activations(l, [&](auto act, auto ract) {
      for (int64_t s = 0; s < S; ++s) {
        p->zr.forward(*ctx, h, z);
        const int64_t t = l.time(s);
        // Pass 1: every gate (reset_after), or z, r and a = r·h_{s−1} for the h gate's GEMM.
        recurrent::for_rows(*ctx, B, kGates * H, [&](int64_t b) {
          T *res = reserve + (b * S + s) * kReserve * H, *yb = y + (b * S + s) * H, *hb = h + b * H;
          std::copy(hb, hb + H, res + 4 * H);
          if (!l.runs(mask, b, s)) {  // h carries over; y repeats the previous output (0 before the first)
            std::fill(res, res + 4 * H, T(0));
            if (!reset_after) std::fill(a_in + b * H, a_in + (b + 1) * H, T(0));
            if (l.zero_output_for_mask || s == 0)
              std::fill(yb, yb + H, T(0));
            else
              std::copy(yb - H, yb, yb);
            return;
          }
          const T *x = xw + (b * S + t) * kGates * H, *r = z + b * rs;
          for (int64_t j = 0; j < H; ++j) {
            const T zg = ract(x[j] + r[j] + (reset_after ? rb[j] : T(0)));
            const T rg = ract(x[H + j] + r[gs + j] + (reset_after ? rb[H + j] : T(0)));
            res[j] = zg, res[H + j] = rg;
            if (reset_after) {
              const T inner = r[2 * gs + j] + rb[2 * H + j], hh = act(x[2 * H + j] + rg * inner), hs = zg * hb[j] + (T(1) - zg) * hh;
              res[2 * H + j] = hh, res[3 * H + j] = inner;
              hb[j] = yb[j] = hs;
            } else {
              res[3 * H + j] = a_in[b * H + j] = rg * hb[j] * h_scale(scale, b, H, j);
            }
          }
        });
        if (reset_after) continue;
        // Pass 2 (reset before): hh = activation(xw_h + a·U_h), then h_s.
        p->h.forward(*ctx, a_in, zh);
        recurrent::for_rows(*ctx, B, H, [&](int64_t b) {
          if (!l.runs(mask, b, s)) return;
          T *res = reserve + (b * S + s) * kReserve * H, *yb = y + (b * S + s) * H, *hb = h + b * H;
          const T* x = xw + (b * S + t) * kGates * H;
          for (int64_t j = 0; j < H; ++j) {
            const T zg = res[j], hh = act(x[2 * H + j] + zh[b * H + j]);
            res[2 * H + j] = hh;
            hb[j] = yb[j] = zg * hb[j] + (T(1) - zg) * hh;
          }
        });
      }
    });
  };
}

// (dy, dh, h0, recurrent_kernel, recurrent_bias, mask, reserve [, recurrent_scale])
//   -> (dxw, dh0, drecurrent_kernel, drecurrent_bias)
template <class T>
KernelFn make_gru_grad(const KernelInit& k) {
  const Loop l(k, k.out_type(0), kGates);
  const bool reset_after = k.node.attrs.b("reset_after");
  const T *dy = in<T>(k, 0), *dh = in<T>(k, 1), *u = in<T>(k, 3), *mask = in<T>(k, 5), *reserve = in<T>(k, 6);
  const T* scale = k.in.size() == 8 ? in<T>(k, 7) : nullptr;
  T *dxw = out<T>(k, 0), *dh0 = out<T>(k, 1), *du = out<T>(k, 2), *drb = out<T>(k, 3);
  const auto p = std::make_shared<Products<T>>(l, reset_after, scale);
  // The gates' recurrent inputs: h_{s−1} (slot 4, scaled per gate), except the h gate without
  // reset_after, whose input is a (slot 3, already scaled).
  const auto kernel_grad = std::make_shared<KernelGrad<T>>(l, kGates, kReserve, std::vector<int>{4, 4, reset_after ? 4 : 3}, scale,
                                                           std::vector<bool>{true, true, reset_after});
  // With reset_after the gradient of the h gate's recurrent product is dpre_h·r, not dxw_h =
  // dpre_h, so it gets its own buffer in time order (its column sums are also drecurrent_bias).
  const auto d_product = std::make_shared<std::vector<T>>(reset_after ? static_cast<std::size_t>(l.batch * l.steps * kGates * l.units) : 0);
  const auto dy_carry = std::make_shared<std::vector<T>>(static_cast<std::size_t>(l.batch * l.units));
  Context* ctx = &context(k);
  return [=] {
    const int64_t B = l.batch, S = l.steps, H = l.units, rs = p->zr.row_stride(), gs = p->zr.gate_stride();
    std::copy(dh, dh + B * H, dh0);  // dh0 holds the running gradient of h_s
    std::fill(dy_carry->begin(), dy_carry->end(), T(0));
    p->zr.prepare(u);
    if (!reset_after) p->h.prepare(u);
    T *dz = p->zr_out.data(), *dpre_h = p->h_in.data(), *da = p->h_out.data(), *carry = dy_carry->data();
    T* dr_all = reset_after ? d_product->data() : dxw;
    recurrent::with_activations(l, [&](auto act, auto ract) {
      for (int64_t s = S - 1; s >= 0; --s) {
        const int64_t t = l.time(s);
        // Pass 1: through h_s = z·h_{s−1} + (1 − z)·hh to the z gate and the h gate (and, with
        // reset_after, the r gate, which then needs no product of its own).
        recurrent::for_rows(*ctx, B, kGates * H, [&](int64_t b) {
          T *dhb = dh0 + b * H, *cy = carry + b * H, *dzb = dz + b * rs;
          T *dx = dxw + (b * S + t) * kGates * H, *dra = dr_all + (b * S + t) * kGates * H;
          const T* dyb = dy + (b * S + s) * H;
          if (!l.runs(mask, b, s)) {  // dh passes through; dy goes on to y_{s−1}
            for (int64_t j = 0; j < H; ++j) {
              cy[j] = l.zero_output_for_mask ? T(0) : cy[j] + dyb[j];
              for (int g = 0; g < p->zr.gates(); ++g) dzb[g * gs + j] = T(0);
              if (!reset_after) dpre_h[b * H + j] = T(0);
            }
            std::fill(dx, dx + kGates * H, T(0));
            std::fill(dra, dra + kGates * H, T(0));
            return;
          }
          const T* res = reserve + (b * S + s) * kReserve * H;
          for (int64_t j = 0; j < H; ++j) {
            const T zg = res[j], rg = res[H + j], hh = res[2 * H + j], hp = res[4 * H + j];
            const T dhs = dhb[j] + dyb[j] + cy[j];
            const T dz_z = derivative(ract, dhs * (hp - hh), zg), dh_h = derivative(act, dhs * (T(1) - zg), hh);
            dzb[j] = dx[j] = dra[j] = dz_z;
            dx[2 * H + j] = dh_h;
            if (reset_after) {
              const T dz_r = derivative(ract, dh_h * res[3 * H + j], rg);
              dzb[gs + j] = dx[H + j] = dra[H + j] = dz_r;
              dzb[2 * gs + j] = dra[2 * H + j] = dh_h * rg;
            } else {
              dpre_h[b * H + j] = dh_h;
            }
            dhb[j] = dhs * zg;  // the direct path; the products' transposes are added below
            cy[j] = T(0);
          }
        });
        if (!reset_after) {
          // Pass 2 (reset before): da = dpre_h·U_hᵀ, then through a = r·h_{s−1}·s_h to r and h_{s−1}.
          std::fill(da, da + B * H, T(0));
          p->h.backward(*ctx, dpre_h, da);
          recurrent::for_rows(*ctx, B, H, [&](int64_t b) {
            if (!l.runs(mask, b, s)) return;
            const T* res = reserve + (b * S + s) * kReserve * H;
            T *dhb = dh0 + b * H, *dzb = dz + b * rs, *dx = dxw + (b * S + t) * kGates * H;
            for (int64_t j = 0; j < H; ++j) {
              const T sh = h_scale(scale, b, H, j), d = da[b * H + j], rg = res[H + j];
              dzb[gs + j] = dx[H + j] = derivative(ract, d * res[4 * H + j] * sh, rg);
              dhb[j] += d * rg * sh;
            }
          });
        }
        p->zr.backward(*ctx, dz, dh0);
      }
    });
    (*kernel_grad)(*ctx, reserve, dr_all, du);
    // drecurrent_bias: column sums of the products' gradients, row by row in a fixed order.
    std::fill(drb, drb + kGates * H, T(0));
    if (reset_after)
      for (int64_t r = 0; r < B * S; ++r)
        for (int64_t c = 0; c < kGates * H; ++c) drb[c] += dr_all[r * kGates * H + c];
  };
}
}  // namespace

REGISTER_CPU_FLOAT_KERNEL("gru", make_gru);
REGISTER_CPU_FLOAT_KERNEL("gru_grad", make_gru_grad);

}  // namespace tandem::backend::cpu
