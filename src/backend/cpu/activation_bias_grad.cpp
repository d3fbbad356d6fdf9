// activation_bias_grad(dy, y) -> (dx, dbias): the activation's gradient and its column sums in one
// pass over the rows, summed as reduce_sum sums them (column_sums.h). With output_dtype float32 on
// 16-bit inputs (a float32 bias's gradient under mixed precision) the float32 sums are kept.
#include <Eigen/Core>

#include "backend/cpu/column_sums.h"
#include "backend/cpu/convert16.h"
#include "backend/cpu/kernel_util.h"
#include "backend/fused_activation.h"

namespace tandem::backend::cpu {

namespace {
template <class T, class Out>
KernelFn make_fused_gradient(const KernelInit& k) {
  const T* dy = in<T>(k, 0);
  const T* y = in<T>(k, 1);
  T* dx = out<T>(k, 0);
  Out* dbias = out<Out>(k, 1);
  const int64_t cols = k.in_types[0].shape.back(), rows = numel(k.in_types[0]) / std::max<int64_t>(1, cols);
  const ColumnSums<T> sums(context(k), rows, cols);
  return with_activation_grad(parse_activation(k.node.attrs.s("activation")), [&](auto grad) -> KernelFn {
    // dbias sums dx as stored (rounded to T), in the compute type: what the unfused activation
    // gradient and reduce_sum give.
    if constexpr (is_low_precision_v<T>)
      return [=] {
        sums.run(dbias, [&](int64_t r, float* acc) {  // a row in chunks widened to float32 (convert16.h)
          alignas(64) float d[kConvertChunk], v[kConvertChunk];
          for (int64_t c0 = 0; c0 < cols; c0 += kConvertChunk) {
            const int64_t m = std::min(kConvertChunk, cols - c0), at = r * cols + c0;
            convert_n(dy + at, d, m);
            convert_n(y + at, v, m);
            for (int64_t c = 0; c < m; ++c) d[c] = grad(d[c], v[c]);
            convert_n(d, dx + at, m);
            convert_n(dx + at, d, m);  // the rounded values
            for (int64_t c = 0; c < m; ++c) acc[c0 + c] += d[c];
          }
        });
      };
    else
      return [=] {
        sums.run(dbias, [&](int64_t r, T* acc) {
          for (int64_t c = 0; c < cols; ++c) {
            const T d = grad(dy[r * cols + c], y[r * cols + c]);
            dx[r * cols + c] = d;
            acc[c] += d;
          }
        });
      };
  });
}

template <class T>
KernelFn make_activation_bias_grad(const KernelInit& k) {
  if constexpr (is_low_precision_v<T>)
    if (k.out_type(1).dtype == DType::F32) return make_fused_gradient<T, float>(k);
  return make_fused_gradient<T, T>(k);
}
}  // namespace

REGISTER_CPU_FLOAT_KERNEL("activation_bias_grad", make_activation_bias_grad);
REGISTER_CPU_16BIT_KERNEL("activation_bias_grad", make_activation_bias_grad);

}  // namespace tandem::backend::cpu
