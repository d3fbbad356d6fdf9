// A device as the runtime and the model see it: memory, copies in and out, the context its kernels
// run with, per-thread setup, synchronisation. Nothing outside a backend touches device memory in
// any other way, so a second kind of device (CUDA) is a second implementation of this interface.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <source_location>
#include <string>

#include "backend/kernel_registry.h"
#include "core/device_name.h"
#include "tandem/errors.h"

namespace tandem::backend {

// A parsed device name ("gpu:0/1" is logical GPU 1 of GPU 0); core reads names, the backend knows
// which kinds exist.
using core::DeviceName;

// Parses "kind", "kind:N" or, for GPUs, "gpu:N/L" for a registered device kind; throws ValueError
// naming the string and the kinds this build has (a "gpu" device in a build without a GPU backend
// says so).
DeviceName parse_device(const std::string& name);

// Raised when a device that this build knows cannot be opened on this machine: no driver, no such
// GPU. Tests that need a GPU catch it and print its message as their reason to skip.
class DeviceUnavailable : public Error {
 public:
  using Error::Error;
};

// Why `name` cannot be used here, or "" when it can (opening it once to find out).
std::string unavailable_reason(const std::string& name);

class Device;

// Device memory that returns itself to its device.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(Device* device, std::byte* data, std::size_t bytes) : device_(device), data_(data), bytes_(bytes) {}
  DeviceBuffer(DeviceBuffer&& o) noexcept { *this = std::move(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();
  std::byte* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }

 private:
  Device* device_ = nullptr;
  std::byte* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// Host memory that a device handed out (Device::allocate_host), returned to it when dropped.
class HostBuffer {
 public:
  HostBuffer() = default;
  HostBuffer(Device* device, std::byte* data, std::size_t bytes) : device_(device), data_(data), bytes_(bytes) {}
  HostBuffer(HostBuffer&& o) noexcept { *this = std::move(o); }
  HostBuffer& operator=(HostBuffer&& o) noexcept;
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  ~HostBuffer();
  std::byte* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }

 private:
  Device* device_ = nullptr;  // null: ordinary memory, freed with std::free
  std::byte* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// At least `bytes` of ordinary host memory, 64-byte aligned and zeroed; what a device without
// memory of its own for copies gives (and what the input pipeline uses without a device).
HostBuffer allocate_ordinary_host(std::size_t bytes);

class Device {
 public:
  explicit Device(const DeviceName& name) : name_(name.str()) {}
  virtual ~Device() = default;
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  const std::string& name() const { return name_; }  // "cpu:0"
  virtual DeviceKind kernel_kind() const = 0;  // which registered kernels run here

  // At least `bytes` of device memory, 64-byte aligned, every page touched (a planned arena never
  // faults in a step). The contents are unspecified: the memory plan writes before it reads.
  virtual DeviceBuffer allocate(std::size_t bytes) = 0;
  virtual void copy_in(void* device_dst, const void* host_src, std::size_t bytes) = 0;
  virtual void copy_out(void* host_dst, const void* device_src, std::size_t bytes) = 0;
  // Host memory for data on its way to this device, 64-byte aligned and zeroed: the input
  // pipeline's staging slots. The CPU's is ordinary memory; a GPU's is page-locked, which its
  // copies read directly (at the bus's full speed, where pageable memory is first copied by the
  // driver) and without the host waiting.
  virtual HostBuffer allocate_host(std::size_t bytes) { return allocate_ordinary_host(bytes); }

  // Asynchronous input copies. A device that copies asynchronously (a GPU) has a copy queue apart
  // from its compute queue, and a step's inputs can be copied while the previous step runs
  // (runtime::Executable's inboxes); the CPU copies at once and says false.
  virtual bool copies_asynchronously() const { return false; }
  // Issues a copy from host to device memory on the copy queue and returns, maybe before the copy
  // happened: until a CopyEvent recorded after it was reached, the host memory must not change and
  // the device memory must not be read. Host memory from allocate_host copies without the host
  // waiting. A synchronous device copies at once.
  virtual void copy_in_async(void* device_dst, const void* host_src, std::size_t bytes) { copy_in(device_dst, host_src, bytes); }
  // A point in the copy queue.
  class CopyEvent {
   public:
    virtual ~CopyEvent() = default;
    virtual void record() = 0;  // after every copy issued so far
    virtual void wait() = 0;    // on the host: returns once the copies before the record finished
    // The compute work issued after this call from the calling thread (a device worker) starts
    // once the copies before the record finished; the host does not wait.
    virtual void order_compute() = 0;
  };
  // Null on a device that copies synchronously (nothing to wait for).
  virtual std::unique_ptr<CopyEvent> make_copy_event() { return nullptr; }
  // Copies device memory to device memory as compute work (on a GPU, on the compute queue: after
  // the work issued before it from the calling thread, before the work issued after it).
  virtual void copy_in_step(void* device_dst, const void* device_src, std::size_t bytes);

  // What this device's kernels receive as KernelInit::context.
  virtual void* kernel_context() = 0;
  // Called once on each thread that will run this device's kernels (the CPU flushes denormals).
  virtual void setup_worker_thread() = 0;
  // Returns when the work issued from the calling thread has finished on the device.
  virtual void synchronize() = 0;

  // A step's kernels, recorded once and replayed instead of launched one by one (CUDA graphs:
  // small models are otherwise bound by launch overhead).
  class StepRecording {
   public:
    virtual ~StepRecording() = default;
    virtual void replay() = 0;  // issues the recorded work; synchronize() waits for it
  };
  // Records what `issue` launches, without running it. Null when this device does not record
  // (the CPU runs kernels on the calling thread) or the work could not be recorded; then nothing
  // ran and the caller issues the step as usual.
  virtual std::unique_ptr<StepRecording> record(const std::function<void()>& issue) {
    (void)issue;
    return nullptr;
  }

 protected:
  friend class DeviceBuffer;
  virtual void release(std::byte* data, std::size_t bytes) = 0;
  friend class HostBuffer;
  virtual void release_host(std::byte* data, std::size_t bytes);

 private:
  std::string name_;
};

// Makes a device of one kind: `threads` is how many host threads it may use (0: all cores).
using DeviceFactory = std::function<std::unique_ptr<Device>(const DeviceName& name, int threads)>;

// The device `name` with that many threads, created on first use and kept for the process.
Device& open_device(const std::string& name, int threads = 0);

struct DeviceKindRegistration {
  DeviceKindRegistration(const char* kind, DeviceFactory factory, std::source_location loc = std::source_location::current());
};

}  // namespace tandem::backend

#define REGISTER_DEVICE_KIND(kind, factory) \
  static const ::tandem::backend::DeviceKindRegistration TANDEM_KCAT(device_kind_registration_, __COUNTER__)(kind, factory)
