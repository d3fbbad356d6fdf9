// lstm and lstm_grad on CUDA devices: a GEMM and an elementwise kernel per step (recurrent.cuh
// describes the loop). Gates (i, f, c, o); reserve slots [i, f, g, o, c_s, h_{s−1}].
#include "backend/cuda/recurrent.cuh"

namespace tandem::backend::cuda {

namespace {
using recurrent::Sizes;

constexpr int kGates = 4, kSlots = 6;
enum Slot { kI, kF, kG, kO, kC, kHPrev };

// Step s, element (b, j) per thread. Z holds h_{s−1}·U for this step (batch, 4·units). Writes
// y, the step's reserve, h_s into step s + 1's h_{s−1} slot (or the outputs h and c after the last
// step) and the next GEMM's operand hs.
template <class T>
__global__ void lstm_step_kernel(Sizes z, int64_t s, T* y, T* h_out, T* c_out, T* reserve, T* hs, const T* xw, const T* c0, const T* mask,
                                 const T* scale, const T* zbuf) {
  const int64_t n = z.units;
  TANDEM_CUDA_LOOP(i, z.states()) {
    const int64_t b = i / n, j = i % n;
    T* res = reserve + z.row(b, s) * kSlots * n;
    const T h_prev = res[kHPrev * n + j];
    const T c_prev = s > 0 ? reserve[z.row(b, s - 1) * kSlots * n + kC * n + j] : c0[i];
    T h = h_prev, c = c_prev, out = recurrent::skipped_output(z, y, b, s, j), gate[kGates] = {};
    if (recurrent::runs(z, mask, b, s)) {
      const T* x = xw + z.row(b, z.time(s)) * kGates * n;
      const T* r = zbuf + b * kGates * n;
      for (int g = 0; g < kGates; ++g) {
        const T pre = x[g * n + j] + r[g * n + j];
        gate[g] = g == kG ? recurrent::activate(z.activation, pre) : recurrent::activate(z.recurrent_activation, pre);
      }
      c = gate[kF] * c_prev + gate[kI] * gate[kG];
      h = gate[kO] * recurrent::activate(z.activation, c);
      out = h;
    }
    for (int g = 0; g < kGates; ++g) res[g * n + j] = gate[g];
    res[kC * n + j] = c;
    y[z.row(b, s) * n + j] = out;
    if (s + 1 < z.steps) {
      reserve[z.row(b, s + 1) * kSlots * n + kHPrev * n + j] = h;
      recurrent::write_recurrent_operand(z, hs, scale ? kGates : 1, scale, b, j, h);
    } else {
      h_out[i] = h;
      c_out[i] = c;
    }
  }
}

// (xw, h0, c0, recurrent_kernel, mask [, recurrent_scale]) -> (y, h, c, reserve)
template <class T>
KernelFn make_lstm(const KernelInit& k) {
  const Shape& xs = k.in_types[0].shape;
  const Sizes z = recurrent::read_sizes(k, xs[0], xs[1], xs[2] / kGates, kGates, kSlots);
  const T *xw = in<T>(k, 0), *h0 = in<T>(k, 1), *c0 = in<T>(k, 2), *u = in<T>(k, 3), *mask = in<T>(k, 4);
  const T* scale = k.in.size() == 6 ? in<T>(k, 5) : nullptr;
  T *y = out<T>(k, 0), *h = out<T>(k, 1), *c = out<T>(k, 2), *reserve = out<T>(k, 3);
  const Context& ctx = context(k);
  cudaStream_t st = ctx.stream;
  const std::string label = kernel_label(k);
  if (z.empty()) {  // no step runs: the states pass through (y and the reserve are empty)
    return [=] {
      if (z.states() == 0) return;
      recurrent::copy(h, h0, z.states(), st, label);
      recurrent::copy(c, c0, z.states(), st, label);
    };
  }
  const int copies = scale ? kGates : 1;
  const recurrent::Scratch<T> scratch(ctx, {z.batch * kGates * z.units, copies * z.states()}, label);
  T *zbuf = scratch.part(0), *hs = scratch.part(1);
  const Gemm gemm = recurrent::step_product<T>(k, z, 0, kGates, scale != nullptr, hs, u, zbuf);
  const unsigned grid = blocks_for(z.states(), ctx);
  return [=] {
    (void)scratch;  // held for the closure's lifetime
    recurrent::state_into_reserve(z, reserve, 0, kHPrev, h0, st, label);
    recurrent::operand_from_state_kernel<<<grid, kBlock, 0, st>>>(z, hs, copies, scale, h0);
    check_launch(label);
    for (int64_t s = 0; s < z.steps; ++s) {
      gemm.run();
      lstm_step_kernel<<<grid, kBlock, 0, st>>>(z, s, y, h, c, reserve, hs, xw, c0, mask, scale, zbuf);
      check_launch(label);
    }
  };
}

// Step s backwards, element (b, j) per thread. dh_carry, dc_carry and dy_carry hold the gradients
// reaching h_s (less the GEMM's products still in p when scaled), c_s and step s's output (from
// later skipped steps that repeated it). Writes dZ_s (into dz for the next GEMM and dz_all for
// drecurrent_kernel), dxw_t, and the carries for step s − 1.
template <class T>
__global__ void lstm_grad_step_kernel(Sizes z, int64_t s, T* dxw, T* dz, T* dz_all, T* dh_carry, T* dc_carry, T* dy_carry, const T* dy,
                                      const T* c0, const T* mask, const T* reserve, const T* scale, const T* p) {
  const int64_t n = z.units;
  TANDEM_CUDA_LOOP(i, z.states()) {
    const int64_t b = i / n, j = i % n;
    T dh = recurrent::carried_dh(z, dh_carry, p, scale, kGates, b, j);
    const T dout = dy[z.row(b, s) * n + j] + dy_carry[i];
    T dpre[kGates] = {};
    if (recurrent::runs(z, mask, b, s)) {
      const T* res = reserve + z.row(b, s) * kSlots * n;
      const T gi = res[kI * n + j], gf = res[kF * n + j], gg = res[kG * n + j], go = res[kO * n + j];
      const T c_prev = s > 0 ? reserve[z.row(b, s - 1) * kSlots * n + kC * n + j] : c0[i];
      const T ac = recurrent::activate(z.activation, res[kC * n + j]);
      dh += dout;
      const T dc = dc_carry[i] + recurrent::activate_grad(z.activation, dh * go, ac);
      dpre[kI] = recurrent::activate_grad(z.recurrent_activation, dc * gg, gi);
      dpre[kF] = recurrent::activate_grad(z.recurrent_activation, dc * c_prev, gf);
      dpre[kG] = recurrent::activate_grad(z.activation, dc * gi, gg);
      dpre[kO] = recurrent::activate_grad(z.recurrent_activation, dh * ac, go);
      dc_carry[i] = dc * gf;
      dh_carry[i] = T(0);  // all of dh_{s−1} comes from the GEMM dZ_s·Uᵀ
      dy_carry[i] = T(0);
    } else {  // h and c carry over unchanged; y_s repeated y_{s−1} unless it was zero
      dh_carry[i] = dh;
      dy_carry[i] = z.zero_output ? T(0) : dout;
    }
    T* dx = dxw + z.row(b, z.time(s)) * kGates * n;
    T* dza = dz_all + z.row(b, s) * kGates * n;
    for (int g = 0; g < kGates; ++g) dx[g * n + j] = dza[g * n + j] = dz[b * kGates * n + g * n + j] = dpre[g];
  }
}

// (dy, dh, dc, h0, c0, recurrent_kernel, mask, reserve [, recurrent_scale]) -> (dxw, dh0, dc0, drecurrent_kernel)
template <class T>
KernelFn make_lstm_grad(const KernelInit& k) {
  const Shape& rs = k.in_types[7].shape;
  const Sizes z = recurrent::read_sizes(k, rs[0], rs[1], rs[2] / kSlots, kGates, kSlots);
  const T *dy = in<T>(k, 0), *dh = in<T>(k, 1), *dc = in<T>(k, 2), *c0 = in<T>(k, 4), *u = in<T>(k, 5), *mask = in<T>(k, 6),
          *reserve = in<T>(k, 7);
  const T* scale = k.in.size() == 9 ? in<T>(k, 8) : nullptr;
  T *dxw = out<T>(k, 0), *dh0 = out<T>(k, 1), *dc0 = out<T>(k, 2), *du = out<T>(k, 3);
  const Context& ctx = context(k);
  cudaStream_t st = ctx.stream;
  const std::string label = kernel_label(k);
  const int64_t n = z.units;
  if (z.empty()) {  // no step ran: the states' gradients pass through, U had no effect
    return [=] {
      recurrent::copy(dh0, dh, z.states(), st, label);
      recurrent::copy(dc0, dc, z.states(), st, label);
      recurrent::zero(du, n * kGates * n, st, label);
    };
  }
  const bool scaled = scale != nullptr;
  const int64_t rows = z.batch * z.steps;
  const recurrent::Scratch<T> scratch(ctx,
                                      {z.states(), z.states(), z.states(), z.batch * kGates * n, rows * kGates * n,
                                       scaled ? kGates * z.states() : 0, scaled ? kGates * rows * n : 0},
                                      label);
  T *dh_carry = scratch.part(0), *dc_carry = scratch.part(1), *dy_carry = scratch.part(2), *dz = scratch.part(3), *dz_all = scratch.part(4),
    *p = scratch.part(5), *scaled_rows = scratch.part(6);
  // Unscaled, the GEMM adds dZ_s·Uᵀ into dh_carry; scaled, it writes each gate's product into p.
  const Gemm step_gemm = recurrent::step_product_grad<T>(k, z, 0, kGates, scaled, dz, u, scaled ? p : dh_carry, scaled ? 0.0 : 1.0);
  // drecurrent_kernel: unscaled, the h_{s−1} slot of the reserve is the GEMM's operand as it is
  // (batch·steps rows, kSlots·units apart); scaled, rows holds one scaled copy per gate.
  const Gemm kernel_gemm = recurrent::kernel_product<T>(k, z, scaled ? scaled_rows : reserve + kHPrev * n, kSlots * n, scaled, dz_all, du);
  const unsigned grid = blocks_for(z.states(), ctx), rows_grid = blocks_for(kGates * rows * n, ctx);
  return [=] {
    (void)scratch;  // held for the closure's lifetime
    recurrent::copy(dh_carry, dh, z.states(), st, label);
    recurrent::copy(dc_carry, dc, z.states(), st, label);
    recurrent::zero(dy_carry, z.states(), st, label);
    if (scaled) recurrent::zero(p, kGates * z.states(), st, label);
    for (int64_t s = z.steps - 1; s >= 0; --s) {
      lstm_grad_step_kernel<<<grid, kBlock, 0, st>>>(z, s, dxw, dz, dz_all, dh_carry, dc_carry, dy_carry, dy, c0, mask, reserve, scale, p);
      check_launch(label);
      step_gemm.run();
    }
    recurrent::final_dh_kernel<<<grid, kBlock, 0, st>>>(z, dh0, dh_carry, p, scale, kGates);
    check_launch(label);
    recurrent::copy(dc0, dc_carry, z.states(), st, label);
    if (scaled) {
      recurrent::kernel_grad_rows_kernel<<<rows_grid, kBlock, 0, st>>>(z, scaled_rows, reserve, scale, kHPrev, -1, 0);
      check_launch(label);
    }
    kernel_gemm.run();
  };
}
}  // namespace

REGISTER_CUDA_FLOAT_KERNEL("lstm", make_lstm);
REGISTER_CUDA_FLOAT_KERNEL("lstm_grad", make_lstm_grad);

}  // namespace tandem::backend::cuda
