// cuDNN's descriptors of one convolution, and the choice of its algorithm, for conv2d.cu. Host
// code: the choice is made once, when a kernel's factory runs.
#pragma once

#include <cudnn.h>

#include <string>

#include "backend/cuda/context.h"

namespace tandem::backend::cuda {

// Throws tandem::Error naming the call, cuDNN's reason and the kernel.
void check_cudnn(cudnnStatus_t s, const char* call, const std::string& label);

struct ConvDescriptors {
  cudnnTensorDescriptor_t image = nullptr, output = nullptr;  // x as cuDNN reads it, and y
  cudnnFilterDescriptor_t filter = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  explicit ConvDescriptors(const std::string& label);  // all four created, none set
  ConvDescriptors(const ConvDescriptors&) = delete;
  ConvDescriptors& operator=(const ConvDescriptors&) = delete;
  ~ConvDescriptors();

 private:
  void release();
};

enum class ConvDirection { Forward, BackwardData, BackwardFilter };

// For the descriptors as they are set (the math type included), the first algorithm of cuDNN's
// heuristic ranking (cudnnGet*Algorithm_v7; the Find functions would run convolutions while the
// plan is built) that is deterministic, so training is bitwise reproducible; computes with FMAs:
// no tensor-op math (TF32) and no FFT or Winograd, whose transforms round differently from the
// CPU's direct sums; and needs at most ctx.workspace_bytes. -1 when none qualifies. The result is
// a cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t as `dir` says. `tensor_ops` admits tensor-op math
// (for bfloat16 and float16 data: exact products, float32 sums), never its down-conversion.
int choose_conv_algorithm(const Context& ctx, const ConvDescriptors& d, ConvDirection dir, const std::string& label,
                          bool tensor_ops = false);

}  // namespace tandem::backend::cuda
