// Device names and the process-wide execution context of each device.
#pragma once

#include <string>

namespace tandem::runtime {

// "cpu" -> "cpu:0"; validates the form ("cpu:N", "gpu:N"); throws ValueError naming the string.
std::string canonical_device(const std::string& device);
// The backend context of a device with that many threads (0: all of this machine's cores),
// created on first use and kept for the process.
void* device_context(const std::string& device, int threads = 0);

}  // namespace tandem::runtime
