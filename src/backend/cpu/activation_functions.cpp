// Kernels of the further activations (backend/activation_functions.h lists them): the forward maps
// x, the gradient maps (dy, x), both with the functors the CUDA kernels use.
#include <Eigen/Core>

#include "backend/activation_functions.h"
#include "backend/cpu/elementwise.h"

namespace tandem::backend::cpu {

namespace {
template <class F> struct Forward {
  template <class T> static KernelFn make(const KernelInit& k) { return map1<T>(k, activation_from<F>(k.node.attrs)); }
};
template <class G> struct Backward {
  template <class T> static KernelFn make(const KernelInit& k) { return map2<T>(k, activation_from<G>(k.node.attrs)); }
};
}  // namespace

#define TANDEM_REGISTER_CPU_ACTIVATION(op, F, G)            \
  REGISTER_CPU_FLOAT_KERNEL(op, Forward<F>::make);          \
  REGISTER_CPU_FLOAT_KERNEL(op "_grad", Backward<G>::make); \
  REGISTER_CPU_16BIT_KERNEL(op, Forward<F>::make);          \
  REGISTER_CPU_16BIT_KERNEL(op "_grad", Backward<G>::make);
TANDEM_ACTIVATION_FUNCTIONS(TANDEM_REGISTER_CPU_ACTIVATION)

}  // namespace tandem::backend::cpu
