#include "runtime/device_threads.h"

#include <map>
#include <memory>
#include <mutex>

#include "tandem/errors.h"

namespace tandem::runtime {

namespace {
// A device worker spins this long for its next step before it sleeps: the caller posts steps a
// few microseconds apart.
constexpr auto kIdleSpin = std::chrono::microseconds(200);
// Steps of several models may be queued on one device; collectives of one step, one per bucket.
constexpr int kQueuedSteps = 16;
constexpr int kQueuedCollectives = 4096;

std::mutex mutex;
std::map<std::string, std::unique_ptr<DeviceThreads>>& all_threads() {
  static std::map<std::string, std::unique_ptr<DeviceThreads>> threads;
  return threads;
}
}  // namespace

DeviceThreads::DeviceThreads() : worker(kQueuedSteps, kIdleSpin), communication(kQueuedCollectives, core::Clock::duration::zero()) {}

DeviceThreads& device_threads(backend::Device& device) {
  std::lock_guard lock(mutex);
  auto& threads = all_threads()[device.name()];
  if (!threads) {
    threads = std::make_unique<DeviceThreads>();
    const std::function<void()> setup = [&device] { device.setup_worker_thread(); };
    // Waited for here (the task must outlive its run); once per device for the process.
    if (!threads->worker.wait(threads->worker.post(setup), core::Clock::now() + std::chrono::seconds(60)))
      throw TimeoutError("the worker thread of " + device.name() + " did not start within 60 s");
  }
  return *threads;
}

bool has_device_threads(const std::string& device_name) {
  std::lock_guard lock(mutex);
  return all_threads().count(device_name) > 0;
}

}  // namespace tandem::runtime
