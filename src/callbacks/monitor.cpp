#include "callbacks/monitor.h"

#include <cmath>

#include "tandem/errors.h"

namespace tandem::callbacks::detail {

bool higher_is_better(const std::string& monitor) {
  std::string name = monitor.rfind("val_", 0) == 0 ? monitor.substr(4) : monitor;
  if (name == "loss") return false;
  for (const char* up : {"acc", "auc", "precision", "recall", "f1", "fbeta", "r2", "iou"})
    if (name.find(up) != std::string::npos) return true;
  return false;
}

Monitor::Monitor(const std::string& callback, std::string monitor, const std::string& mode, double min_delta)
    : name_(std::move(monitor)), min_delta_(std::abs(min_delta)) {
  if (mode == "min" || mode == "max")
    maximize_ = mode == "max";
  else if (mode == "auto")
    maximize_ = higher_is_better(name_);
  else
    throw ValueError(callback + " mode '" + mode + "' is unknown; expected \"auto\", \"min\" or \"max\"");
}

bool Monitor::improves(double current, const std::optional<double>& reference) const {
  if (!reference) return true;
  return maximize_ ? current - min_delta_ > *reference : current + min_delta_ < *reference;
}

}  // namespace tandem::callbacks::detail
