// Default: one device runs the whole program; every step is forward, metrics, backward, update.
#include "distribute/strategy.h"
#include "compile/lower.h"
#include "backend/device.h"
#include "tandem/errors.h"

namespace tandem::distribute {

graph::Layout split_rows(const graph::Node& feed, int k, const std::string& strategy, const std::string& what, const std::string& across) {
  const int64_t rows = feed.outputs[0].shape.rank() ? feed.outputs[0].shape[0] : 0;
  if (rows < k)
    throw ValueError(strategy + ": a " + what + " of " + std::to_string(rows) + " rows cannot be split " + across + "; use " + what + "es of at least " +
                     std::to_string(k) + " rows");
  return graph::Layout::even_split(0, rows, k);
}

namespace {
class DefaultStrategy : public Strategy {
 public:
  DefaultStrategy(std::string device, DefaultOptions o) : device_(backend::parse_device(device).str()), options_(o) {
    if (o.micro_batches < 1) throw ValueError("Default: micro_batches must be >= 1, got " + std::to_string(o.micro_batches));
  }
  std::vector<std::string> devices() const override { return {device_}; }
  int micro_batches() const override { return static_cast<int>(options_.micro_batches); }

  compile::LoweringOptions describe(const graph::Graph&, int micro_batches) const override {
    return {.devices = {device_}, .micro_batches = micro_batches};
  }

 private:
  std::string device_;
  DefaultOptions options_;
};
}  // namespace

StrategyPtr Default(const std::string& device, const DefaultOptions& options) {
  return std::make_shared<DefaultStrategy>(device, options);
}

}  // namespace tandem::distribute
