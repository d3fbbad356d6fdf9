// The CPU device: host memory, its own thread pool, denormals flushed on the threads that run
// its kernels. "cpu:0", "cpu:1", ... are virtual devices sharing this machine's cores.
#include "backend/cpu/cpu_device.h"

#include <cstdlib>
#include <cstring>

#include "backend/cpu/denormals.h"
#include "tandem/errors.h"

namespace tandem::backend::cpu {

CpuDevice::CpuDevice(const DeviceName& name, int threads) : Device(name), context_(threads) {}

DeviceBuffer CpuDevice::allocate(std::size_t bytes) {
  const std::size_t rounded = (std::max<std::size_t>(64, bytes) + 63) / 64 * 64;
  auto* data = static_cast<std::byte*>(std::aligned_alloc(64, rounded));
  if (!data) throw Error("cannot allocate " + std::to_string(bytes) + " bytes on " + name());
  std::memset(data, 0, rounded);  // touch every page now, not in the first step
  return DeviceBuffer(this, data, rounded);
}

void CpuDevice::release(std::byte* data, std::size_t) { std::free(data); }

void CpuDevice::copy_in(void* device_dst, const void* host_src, std::size_t bytes) {
  if (bytes) std::memcpy(device_dst, host_src, bytes);
}

void CpuDevice::copy_out(void* host_dst, const void* device_src, std::size_t bytes) {
  if (bytes) std::memcpy(host_dst, device_src, bytes);
}

void CpuDevice::setup_worker_thread() { flush_denormals_on_this_thread(); }

REGISTER_DEVICE_KIND("cpu", [](const DeviceName& name, int threads) { return std::make_unique<CpuDevice>(name, threads); });

}  // namespace tandem::backend::cpu
