// Device names and the process-wide execution context of each device.
#pragma once

#include <string>

namespace tandem::runtime {

// "cpu" -> "cpu:0"; validates the form ("cpu:N", "gpu:N"); throws ValueError naming the string.
std::string canonical_device(const std::string& device);
// The backend context for a device, created on first use. A CPU device gets `threads` threads
// (0: all of this machine's cores).
void* device_context(const std::string& device, int threads = 0);

}  // namespace tandem::runtime
