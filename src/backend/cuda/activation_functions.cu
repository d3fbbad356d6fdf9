// Kernels of the further activations on CUDA devices (backend/activation_functions.h lists them):
// the per-element math is the CPU kernels'.
#include "backend/activation_functions.h"
#include "backend/cuda/elementwise.cuh"

namespace tandem::backend::cuda {

namespace {
template <class F> struct Forward {
  template <class T> static KernelFn make(const KernelInit& k) { return map1<T>(k, activation_from<F>(k.node.attrs)); }
};
template <class G> struct Backward {
  template <class T> static KernelFn make(const KernelInit& k) { return map2<T>(k, activation_from<G>(k.node.attrs)); }
};
}  // namespace

#define TANDEM_REGISTER_CUDA_ACTIVATION(op, F, G)            \
  REGISTER_CUDA_FLOAT_KERNEL(op, Forward<F>::make);          \
  REGISTER_CUDA_FLOAT_KERNEL(op "_grad", Backward<G>::make); \
  REGISTER_CUDA_16BIT_KERNEL(op, Forward<F>::make);          \
  REGISTER_CUDA_16BIT_KERNEL(op "_grad", Backward<G>::make);
TANDEM_ACTIVATION_FUNCTIONS(TANDEM_REGISTER_CUDA_ACTIVATION)

}  // namespace tandem::backend::cuda
