// The runtime's watchdog. fit, evaluate and predict wait for each device to finish its step, for
// each device's communication thread, and for the next batch; a wait longer than this limit
// raises tandem::TimeoutError naming the device and the kernel, collective or batch it waited for,
// instead of hanging. (A collective's own timeout is MirroredOptions::timeout_ms.)
#pragma once

#include <chrono>

namespace tandem {

// Default: 600 s, or the environment variable TANDEM_WATCHDOG_SECONDS when it is set. A limit
// that is not positive is refused with ValueError.
void set_watchdog_timeout(std::chrono::milliseconds limit);
std::chrono::milliseconds watchdog_timeout();

}  // namespace tandem
