#include "tandem/watchdog.h"

#include <atomic>
#include <cstdlib>
#include <string>

#include "tandem/errors.h"

namespace tandem {

namespace {
std::chrono::milliseconds default_limit() {
  const char* env = std::getenv("TANDEM_WATCHDOG_SECONDS");
  if (!env || !*env) return std::chrono::minutes(10);
  char* end = nullptr;
  const double seconds = std::strtod(env, &end);
  if (*end != '\0' || !(seconds > 0))
    throw ValueError(std::string("TANDEM_WATCHDOG_SECONDS: expected a positive number of seconds, got \"") + env + "\"");
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

std::atomic<int64_t>& limit_ms() {
  static std::atomic<int64_t> limit{default_limit().count()};
  return limit;
}
}  // namespace

void set_watchdog_timeout(std::chrono::milliseconds limit) {
  if (limit.count() <= 0)
    throw ValueError("set_watchdog_timeout: expected a positive limit, got " + std::to_string(limit.count()) + " ms");
  limit_ms().store(limit.count(), std::memory_order_relaxed);
}

std::chrono::milliseconds watchdog_timeout() { return std::chrono::milliseconds(limit_ms().load(std::memory_order_relaxed)); }

}  // namespace tandem
