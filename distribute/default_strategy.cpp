// Default: one device runs the whole program; every step is forward, metrics, backward, update.
#include <cstdlib>
#include <thread>

#include "distribute/strategy.h"
#include "compile/lower.h"
#include "backend/device.h"
#include "tandem/errors.h"

namespace tandem::distribute {

int Strategy::threads_per_device() const {
  // TANDEM_NUM_THREADS caps the threads of the whole process (like OMP_NUM_THREADS).
  const char* env = std::getenv("TANDEM_NUM_THREADS");
  const int cores = env && std::atoi(env) > 0 ? std::atoi(env) : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, cores / static_cast<int>(devices().size()));
}

namespace {
class DefaultStrategy : public Strategy {
 public:
  explicit DefaultStrategy(std::string device) : device_(backend::parse_device(device).str()) {}
  std::vector<std::string> devices() const override { return {device_}; }

  compile::Plan lower(const graph::Graph& g, const std::vector<graph::Value>& fetches) const override {
    return compile::lower(g, fetches, {.devices = {device_}});
  }

 private:
  std::string device_;
};
}  // namespace

StrategyPtr Default(const std::string& device) { return std::make_shared<DefaultStrategy>(device); }

}  // namespace tandem::distribute
