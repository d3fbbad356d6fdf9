#include "runtime/devices.h"

#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "backend/cpu/context.h"
#include "tandem/errors.h"

namespace tandem::runtime {

std::string canonical_device(const std::string& device) {
  const auto colon = device.find(':');
  const std::string kind = device.substr(0, colon);
  const std::string index = colon == std::string::npos ? "0" : device.substr(colon + 1);
  const bool digits = !index.empty() && index.size() < 6 && index.find_first_not_of("0123456789") == std::string::npos;
  if ((kind != "cpu" && kind != "gpu") || !digits)
    throw ValueError("unknown device '" + device + "'; expected \"cpu\", \"cpu:N\" or \"gpu:N\"");
  return kind + ":" + std::to_string(std::stoi(index));
}

void* device_context(const std::string& device, int threads) {
  static std::mutex mutex;
  static std::map<std::pair<std::string, int>, std::unique_ptr<backend::cpu::Context>> contexts;
  const std::string name = canonical_device(device);
  if (name.rfind("gpu:", 0) == 0)
    throw ValueError("device '" + name + "': this build of Tandem has no GPU backend; use \"cpu\" devices");
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::lock_guard lock(mutex);
  auto& ctx = contexts[{name, threads}];
  if (!ctx) ctx = std::make_unique<backend::cpu::Context>(threads);
  return ctx.get();
}

}  // namespace tandem::runtime
