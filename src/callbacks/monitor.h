// What ModelCheckpoint, EarlyStopping and ReduceLROnPlateau share (Keras's MonitorCallback): which
// way a monitored value improves, and whether a value improves on a reference by more than min_delta.
#pragma once

#include <optional>
#include <string>

namespace tandem::callbacks::detail {

// Keras's "auto" mode: losses go down, accuracy-like metrics (Keras's `_direction = "up"`) go up.
bool higher_is_better(const std::string& monitor);

class Monitor {
 public:
  // `mode` is "auto", "min" or "max" (anything else is a ValueError naming `callback`).
  Monitor(const std::string& callback, std::string monitor, const std::string& mode, double min_delta = 0.0);
  const std::string& name() const { return name_; }
  bool maximize() const { return maximize_; }
  // Keras's _is_improvement: current - min_delta > reference (max), current + min_delta < reference
  // (min); anything improves on no reference.
  bool improves(double current, const std::optional<double>& reference) const;

 private:
  std::string name_;
  bool maximize_ = false;
  double min_delta_ = 0;
};

}  // namespace tandem::callbacks::detail
