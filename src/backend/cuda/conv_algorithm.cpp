// The cuDNN side of conv2d.cu: descriptors and the algorithm choice. See conv_algorithm.h.
#include "backend/cuda/conv_algorithm.h"

#include <vector>

#include "tandem/errors.h"

namespace tandem::backend::cuda {

void check_cudnn(cudnnStatus_t s, const char* call, const std::string& label) {
  if (s != CUDNN_STATUS_SUCCESS) throw Error(label + ": " + call + " failed with " + cudnnGetErrorString(s));
}

ConvDescriptors::ConvDescriptors(const std::string& label) {
  try {
    check_cudnn(cudnnCreateTensorDescriptor(&image), "cudnnCreateTensorDescriptor", label);
    check_cudnn(cudnnCreateTensorDescriptor(&output), "cudnnCreateTensorDescriptor", label);
    check_cudnn(cudnnCreateFilterDescriptor(&filter), "cudnnCreateFilterDescriptor", label);
    check_cudnn(cudnnCreateConvolutionDescriptor(&conv), "cudnnCreateConvolutionDescriptor", label);
  } catch (...) {
    release();  // a constructor that throws runs no destructor
    throw;
  }
}

ConvDescriptors::~ConvDescriptors() { release(); }

void ConvDescriptors::release() {  // cannot report from a destructor; a failed destroy leaks a little host memory
  if (conv) cudnnDestroyConvolutionDescriptor(conv);
  if (filter) cudnnDestroyFilterDescriptor(filter);
  if (output) cudnnDestroyTensorDescriptor(output);
  if (image) cudnnDestroyTensorDescriptor(image);
}

namespace {
template <class Perf, class Heuristics, class Workspace, class Transform>
int first_usable(int max_count, Heuristics heuristics, Workspace workspace, Transform is_transform, std::size_t limit, bool tensor_ops,
                 const char* call, const std::string& label) {
  std::vector<Perf> perf(static_cast<std::size_t>(max_count > 0 ? max_count : 1));
  int returned = 0;
  check_cudnn(heuristics(static_cast<int>(perf.size()), &returned, perf.data()), call, label);
  for (int i = 0; i < returned; ++i) {
    const Perf& p = perf[static_cast<std::size_t>(i)];
    if (p.status != CUDNN_STATUS_SUCCESS || p.determinism != CUDNN_DETERMINISTIC || (p.mathType == CUDNN_TENSOR_OP_MATH && !tensor_ops) ||
        p.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION || is_transform(p.algo))
      continue;
    std::size_t bytes = 0;  // asked again under the descriptor's own math type, which the run uses
    if (workspace(p.algo, &bytes) == CUDNN_STATUS_SUCCESS && bytes <= limit) return static_cast<int>(p.algo);
  }
  return -1;
}
}  // namespace

int choose_conv_algorithm(const Context& ctx, const ConvDescriptors& d, ConvDirection dir, const std::string& label, bool tensor_ops) {
  cudnnHandle_t h = ctx.dnn;
  int n = 0;
  switch (dir) {
    case ConvDirection::Forward:
      check_cudnn(cudnnGetConvolutionForwardAlgorithmMaxCount(h, &n), "cudnnGetConvolutionForwardAlgorithmMaxCount", label);
      return first_usable<cudnnConvolutionFwdAlgoPerf_t>(
          n,
          [&](int count, int* got, cudnnConvolutionFwdAlgoPerf_t* p) {
            return cudnnGetConvolutionForwardAlgorithm_v7(h, d.image, d.filter, d.conv, d.output, count, got, p);
          },
          [&](cudnnConvolutionFwdAlgo_t a, std::size_t* bytes) {
            return cudnnGetConvolutionForwardWorkspaceSize(h, d.image, d.filter, d.conv, d.output, a, bytes);
          },
          [](cudnnConvolutionFwdAlgo_t a) { return a >= CUDNN_CONVOLUTION_FWD_ALGO_FFT; },  // FFT, FFT_TILING, both WINOGRADs
          ctx.workspace_bytes, tensor_ops, "cudnnGetConvolutionForwardAlgorithm_v7", label);
    case ConvDirection::BackwardData:
      check_cudnn(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(h, &n), "cudnnGetConvolutionBackwardDataAlgorithmMaxCount", label);
      return first_usable<cudnnConvolutionBwdDataAlgoPerf_t>(
          n,
          [&](int count, int* got, cudnnConvolutionBwdDataAlgoPerf_t* p) {
            return cudnnGetConvolutionBackwardDataAlgorithm_v7(h, d.filter, d.output, d.conv, d.image, count, got, p);
          },
          [&](cudnnConvolutionBwdDataAlgo_t a, std::size_t* bytes) {
            return cudnnGetConvolutionBackwardDataWorkspaceSize(h, d.filter, d.output, d.conv, d.image, a, bytes);
          },
          [](cudnnConvolutionBwdDataAlgo_t a) { return a >= CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT; },  // FFT, FFT_TILING, both WINOGRADs
          ctx.workspace_bytes, tensor_ops, "cudnnGetConvolutionBackwardDataAlgorithm_v7", label);
    case ConvDirection::BackwardFilter:
      check_cudnn(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(h, &n), "cudnnGetConvolutionBackwardFilterAlgorithmMaxCount", label);
      return first_usable<cudnnConvolutionBwdFilterAlgoPerf_t>(
          n,
          [&](int count, int* got, cudnnConvolutionBwdFilterAlgoPerf_t* p) {
            return cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, d.image, d.output, d.conv, d.filter, count, got, p);
          },
          [&](cudnnConvolutionBwdFilterAlgo_t a, std::size_t* bytes) {
            return cudnnGetConvolutionBackwardFilterWorkspaceSize(h, d.image, d.output, d.conv, d.filter, a, bytes);
          },
          [](cudnnConvolutionBwdFilterAlgo_t a) {  // FFT, then WINOGRAD, WINOGRAD_NONFUSED, FFT_TILING
            return a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT || a >= CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD;
          },
          ctx.workspace_bytes, tensor_ops, "cudnnGetConvolutionBackwardFilterAlgorithm_v7", label);
  }
  return -1;
}

}  // namespace tandem::backend::cuda
