// The CPU implementation of backend::Device (see backend/device.h). Public to the tree so that a
// test-only device kind can reuse the CPU kernels over memory of its own.
#pragma once

#include "backend/cpu/context.h"
#include "backend/device.h"

namespace tandem::backend::cpu {

class CpuDevice : public Device {
 public:
  CpuDevice(const DeviceName& name, int threads);
  DeviceKind kernel_kind() const override { return DeviceKind::Cpu; }
  DeviceBuffer allocate(std::size_t bytes) override;
  void copy_in(void* device_dst, const void* host_src, std::size_t bytes) override;
  void copy_out(void* host_dst, const void* device_src, std::size_t bytes) override;
  void* kernel_context() override { return &context_; }
  void setup_worker_thread() override;
  void synchronize() override {}  // kernels run on the calling thread and its pool

 protected:
  void release(std::byte* data, std::size_t bytes) override;

 private:
  Context context_;
};

}  // namespace tandem::backend::cpu
