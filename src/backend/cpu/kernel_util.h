// Small helpers shared by the CPU kernels.
#pragma once

#include "backend/cpu/context.h"
#include "backend/kernel_registry.h"

namespace tandem::backend::cpu {

inline Context& context(const KernelInit& k) { return *static_cast<Context*>(k.context); }
template <class T>
const T* in(const KernelInit& k, int i) { return static_cast<const T*>(k.in[static_cast<std::size_t>(i)]); }
template <class T>
T* out(const KernelInit& k, int i = 0) { return static_cast<T*>(k.out[static_cast<std::size_t>(i)]); }
inline int64_t numel(const TensorType& t) { return t.shape.num_elements(); }

// Elementwise loops below this size run on one thread: waking another costs more than the work.
constexpr int64_t kElementwiseGrain = 1 << 15;

}  // namespace tandem::backend::cpu

// Registers make<float> and make<double> for an op.
#define REGISTER_CPU_FLOAT_KERNEL(op, make)                                                            \
  REGISTER_KERNEL(op, ::tandem::backend::DeviceKind::Cpu, ::tandem::DType::F32, make<float>); \
  REGISTER_KERNEL(op, ::tandem::backend::DeviceKind::Cpu, ::tandem::DType::F64, make<double>)

// Registers make<Eigen::bfloat16> and make<Eigen::half> for an op (low_precision.h; the file
// includes <Eigen/Core>).
#define REGISTER_CPU_16BIT_KERNEL(op, make)                                                           \
  REGISTER_KERNEL(op, ::tandem::backend::DeviceKind::Cpu, ::tandem::DType::BF16, make<Eigen::bfloat16>); \
  REGISTER_KERNEL(op, ::tandem::backend::DeviceKind::Cpu, ::tandem::DType::F16, make<Eigen::half>)
