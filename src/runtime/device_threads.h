// The threads of one device, made once for the process and shared by every compiled step: the
// worker that runs its steps and the thread that runs its collectives.
#pragma once

#include <string>

#include "backend/device.h"
#include "core/task_thread.h"

namespace tandem::runtime {

struct DeviceThreads {
  DeviceThreads();
  core::TaskThread worker;
  core::TaskThread communication;
};

// The threads of `device` (keyed by its name), created on first use; the worker runs the device's
// per-thread setup before anything else.
DeviceThreads& device_threads(backend::Device& device);
// Whether the device named so has its threads yet: for tests.
bool has_device_threads(const std::string& device_name);

}  // namespace tandem::runtime
