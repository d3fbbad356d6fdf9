// simple_rnn and simple_rnn_grad on CUDA devices: a GEMM and an elementwise kernel per step
// (recurrent.cuh describes the loop). One gate; reserve slots [h_s, h_{s−1}].
#include "backend/cuda/recurrent.cuh"

namespace tandem::backend::cuda {

namespace {
using recurrent::Sizes;

constexpr int kSlots = 2;
enum Slot { kH, kHPrev };

// Step s, element (b, j) per thread; zbuf holds h_{s−1}·U for this step (batch, units).
template <class T>
__global__ void simple_rnn_step_kernel(Sizes z, int64_t s, T* y, T* h_out, T* reserve, T* hs, const T* xw, const T* mask, const T* scale,
                                       const T* zbuf) {
  const int64_t n = z.units;
  TANDEM_CUDA_LOOP(i, z.states()) {
    const int64_t b = i / n, j = i % n;
    T* res = reserve + z.row(b, s) * kSlots * n;
    T h = res[kHPrev * n + j], out = recurrent::skipped_output(z, y, b, s, j);
    if (recurrent::runs(z, mask, b, s)) {
      h = recurrent::activate(z.activation, xw[z.row(b, z.time(s)) * n + j] + zbuf[i]);
      out = h;
    }
    res[kH * n + j] = h;
    y[z.row(b, s) * n + j] = out;
    if (s + 1 < z.steps) {
      reserve[z.row(b, s + 1) * kSlots * n + kHPrev * n + j] = h;
      recurrent::write_recurrent_operand(z, hs, 1, scale, b, j, h);
    } else {
      h_out[i] = h;
    }
  }
}

// (xw, h0, recurrent_kernel, mask [, recurrent_scale]) -> (y, h, reserve)
template <class T>
KernelFn make_simple_rnn(const KernelInit& k) {
  const Shape& xs = k.in_types[0].shape;
  const Sizes z = recurrent::read_sizes(k, xs[0], xs[1], xs[2], 1, kSlots);
  const T *xw = in<T>(k, 0), *h0 = in<T>(k, 1), *u = in<T>(k, 2), *mask = in<T>(k, 3);
  const T* scale = k.in.size() == 5 ? in<T>(k, 4) : nullptr;
  T *y = out<T>(k, 0), *h = out<T>(k, 1), *reserve = out<T>(k, 2);
  const Context& ctx = context(k);
  cudaStream_t st = ctx.stream;
  const std::string label = kernel_label(k);
  if (z.empty()) return [=] { recurrent::copy(h, h0, z.states(), st, label); };  // no step runs
  // One gate: the scaled copy of h_{s−1} is a single matrix, and the GEMM is the same either way.
  const recurrent::Scratch<T> scratch(ctx, {z.states(), z.states()}, label);
  T *zbuf = scratch.part(0), *hs = scratch.part(1);
  const Gemm gemm = recurrent::step_product<T>(k, z, 0, 1, false, hs, u, zbuf);
  const unsigned grid = blocks_for(z.states(), ctx);
  return [=] {
    (void)scratch;  // held for the closure's lifetime
    recurrent::state_into_reserve(z, reserve, 0, kHPrev, h0, st, label);
    recurrent::operand_from_state_kernel<<<grid, kBlock, 0, st>>>(z, hs, 1, scale, h0);
    check_launch(label);
    for (int64_t s = 0; s < z.steps; ++s) {
      gemm.run();
      simple_rnn_step_kernel<<<grid, kBlock, 0, st>>>(z, s, y, h, reserve, hs, xw, mask, scale, zbuf);
      check_launch(label);
    }
  };
}

// Step s backwards, element (b, j) per thread: dh_carry (plus the last GEMM's product in p when
// scaled) and dy_carry are the gradients reaching h_s and step s's output; writes dZ_s (dz, dz_all),
// dxw_t and the carries for step s − 1.
template <class T>
__global__ void simple_rnn_grad_step_kernel(Sizes z, int64_t s, T* dxw, T* dz, T* dz_all, T* dh_carry, T* dy_carry, const T* dy,
                                            const T* mask, const T* reserve, const T* scale, const T* p) {
  const int64_t n = z.units;
  TANDEM_CUDA_LOOP(i, z.states()) {
    const int64_t b = i / n, j = i % n;
    T dh = recurrent::carried_dh(z, dh_carry, p, scale, 1, b, j);
    const T dout = dy[z.row(b, s) * n + j] + dy_carry[i];
    T dpre = T(0);
    if (recurrent::runs(z, mask, b, s)) {
      dpre = recurrent::activate_grad(z.activation, dh + dout, reserve[z.row(b, s) * kSlots * n + kH * n + j]);
      dh_carry[i] = T(0);  // all of dh_{s−1} comes from the GEMM dZ_s·Uᵀ
      dy_carry[i] = T(0);
    } else {  // h carries over unchanged; y_s repeated y_{s−1} unless it was zero
      dh_carry[i] = dh;
      dy_carry[i] = z.zero_output ? T(0) : dout;
    }
    dxw[z.row(b, z.time(s)) * n + j] = dz_all[z.row(b, s) * n + j] = dz[i] = dpre;
  }
}

// (dy, dh, h0, recurrent_kernel, mask, reserve [, recurrent_scale]) -> (dxw, dh0, drecurrent_kernel)
template <class T>
KernelFn make_simple_rnn_grad(const KernelInit& k) {
  const Shape& rs = k.in_types[5].shape;
  const Sizes z = recurrent::read_sizes(k, rs[0], rs[1], rs[2] / kSlots, 1, kSlots);
  const T *dy = in<T>(k, 0), *dh = in<T>(k, 1), *u = in<T>(k, 3), *mask = in<T>(k, 4), *reserve = in<T>(k, 5);
  const T* scale = k.in.size() == 7 ? in<T>(k, 6) : nullptr;
  T *dxw = out<T>(k, 0), *dh0 = out<T>(k, 1), *du = out<T>(k, 2);
  const Context& ctx = context(k);
  cudaStream_t st = ctx.stream;
  const std::string label = kernel_label(k);
  const int64_t n = z.units;
  if (z.empty()) {  // no step ran: dh passes through, U had no effect
    return [=] {
      recurrent::copy(dh0, dh, z.states(), st, label);
      recurrent::zero(du, n * n, st, label);
    };
  }
  const bool scaled = scale != nullptr;
  const recurrent::Scratch<T> scratch(
      ctx, {z.states(), z.states(), z.states(), z.batch * z.steps * n, scaled ? z.states() : 0, scaled ? z.batch * z.steps * n : 0}, label);
  T *dh_carry = scratch.part(0), *dy_carry = scratch.part(1), *dz = scratch.part(2), *dz_all = scratch.part(3), *p = scratch.part(4),
    *scaled_rows = scratch.part(5);
  // Unscaled, the GEMM adds dZ_s·Uᵀ into dh_carry; scaled, it writes the product into p, which the
  // next step's kernel scales and adds.
  const Gemm step_gemm = recurrent::step_product_grad<T>(k, z, 0, 1, scaled, dz, u, scaled ? p : dh_carry, scaled ? 0.0 : 1.0);
  // drecurrent_kernel: the reserve's h_{s−1} slot as it is, or its scaled copy.
  const Gemm kernel_gemm = recurrent::kernel_product<T>(k, z, scaled ? scaled_rows : reserve + kHPrev * n, kSlots * n, scaled, dz_all, du);
  const unsigned grid = blocks_for(z.states(), ctx), rows_grid = blocks_for(z.batch * z.steps * n, ctx);
  return [=] {
    (void)scratch;  // held for the closure's lifetime
    recurrent::copy(dh_carry, dh, z.states(), st, label);
    recurrent::zero(dy_carry, z.states(), st, label);
    if (scaled) recurrent::zero(p, z.states(), st, label);
    for (int64_t s = z.steps - 1; s >= 0; --s) {
      simple_rnn_grad_step_kernel<<<grid, kBlock, 0, st>>>(z, s, dxw, dz, dz_all, dh_carry, dy_carry, dy, mask, reserve, scale, p);
      check_launch(label);
      step_gemm.run();
    }
    recurrent::final_dh_kernel<<<grid, kBlock, 0, st>>>(z, dh0, dh_carry, p, scale, 1);
    check_launch(label);
    if (scaled) {
      recurrent::kernel_grad_rows_kernel<<<rows_grid, kBlock, 0, st>>>(z, scaled_rows, reserve, scale, kHPrev, -1, 0);
      check_launch(label);
    }
    kernel_gemm.run();
  };
}
}  // namespace

REGISTER_CUDA_FLOAT_KERNEL("simple_rnn", make_simple_rnn);
REGISTER_CUDA_FLOAT_KERNEL("simple_rnn_grad", make_simple_rnn_grad);

}  // namespace tandem::backend::cuda
