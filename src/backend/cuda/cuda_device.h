// The CUDA implementation of backend::Device: "gpu:N" is physical GPU N, "gpu:N/L" logical GPU L
// on it (its own memory, streams and worker; the chip is shared). Opening one on a machine without
// a usable GPU raises DeviceUnavailable with the CUDA runtime's reason.
#pragma once

#include "backend/cuda/context.h"
#include "backend/device.h"
#include "backend/host_pool.h"

namespace tandem::backend::cuda {

class CudaDevice : public Device {
 public:
  explicit CudaDevice(const DeviceName& name);
  ~CudaDevice() override;
  DeviceKind kernel_kind() const override { return DeviceKind::Cuda; }
  DeviceBuffer allocate(std::size_t bytes) override;
  void copy_in(void* device_dst, const void* host_src, std::size_t bytes) override;
  void copy_out(void* host_dst, const void* device_src, std::size_t bytes) override;
  HostBuffer allocate_host(std::size_t bytes) override;  // page-locked (cudaHostAlloc), for every GPU
  bool copies_asynchronously() const override { return true; }
  void copy_in_async(void* device_dst, const void* host_src, std::size_t bytes) override;
  std::unique_ptr<CopyEvent> make_copy_event() override;  // a CUDA event on the copies stream
  void copy_in_step(void* device_dst, const void* device_src, std::size_t bytes) override;
  void* kernel_context() override { return &context_; }
  void setup_worker_thread() override;
  void synchronize() override;
  // A CUDA graph of the step (TANDEM_CUDA_GRAPHS=0 turns recording off).
  std::unique_ptr<StepRecording> record(const std::function<void()>& issue) override;

 protected:
  void release(std::byte* data, std::size_t bytes) override;
  void release_host(std::byte* data, std::size_t bytes) override;

 private:
  Context context_;
  Faults faults_;
  HostPool host_pool_;  // page-locked buffers given back, kept for the next fit, evaluate or predict
};

// The number of usable GPUs; throws DeviceUnavailable with the runtime's reason when there are none.
int usable_gpus();

}  // namespace tandem::backend::cuda
