// integer_lookup on CUDA devices: the table is copied to the device once, when the kernel is made;
// each thread binary-searches its id as the CPU kernel does (ops::lookup_one).
#include <memory>
#include <vector>

#include "backend/cuda/device_scratch.h"
#include "backend/cuda/kernel_util.cuh"
#include "ops/lookup.h"

namespace tandem::backend::cuda {

namespace {
std::shared_ptr<int64_t> upload(const Context& ctx, const std::vector<int64_t>& v, const std::string& label) {
  std::shared_ptr<int64_t> d = device_scratch<int64_t>(ctx, static_cast<int64_t>(v.size()), label);
  if (!v.empty()) CUDA_CHECK(cudaMemcpy(d.get(), v.data(), v.size() * sizeof(int64_t), cudaMemcpyHostToDevice), "copying the table of " + label);
  return d;
}

struct Table {
  const int64_t *keys, *values;
  int64_t size, missing, buckets, bucket_start, mask_key, mask_value;
  bool has_mask;
};

template <class Id>
__global__ void integer_lookup_kernel(int64_t* y, const Id* ids, int64_t n, Table t) {
  TANDEM_CUDA_LOOP(i, n) {
    y[i] = ops::lookup_one(static_cast<int64_t>(ids[i]), t.keys, t.values, t.size, t.missing, t.buckets, t.bucket_start, t.has_mask,
                           t.mask_key, t.mask_value);
  }
}

template <class Id>
KernelFn make_integer_lookup(const KernelInit& k) {
  const ops::IntegerTable host = ops::integer_table(k.node.attrs);
  const std::string label = kernel_label(k);
  std::shared_ptr<int64_t> keys = upload(context(k), host.keys, label), values = upload(context(k), host.values, label);
  const Table t{keys.get(), values.get(), static_cast<int64_t>(host.keys.size()), host.missing, host.buckets, host.bucket_start,
                host.mask_key, host.mask_value, host.has_mask};
  const int64_t n = numel(k.out_type());
  const Id* ids = in<Id>(k, 0);
  int64_t* y = out<int64_t>(k);
  return launch_over(k, n, [=](unsigned grid, cudaStream_t s) {
    (void)keys, (void)values;  // held for the kernel's lifetime
    integer_lookup_kernel<<<grid, kBlock, 0, s>>>(y, ids, n, t);
  });
}
}  // namespace

REGISTER_KERNEL("integer_lookup", DeviceKind::Cuda, DType::I32, make_integer_lookup<int32_t>);
REGISTER_KERNEL("integer_lookup", DeviceKind::Cuda, DType::I64, make_integer_lookup<int64_t>);

}  // namespace tandem::backend::cuda
