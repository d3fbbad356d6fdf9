// Keras 3's learning-rate schedules (keras/src/optimizers/schedules/learning_rate_schedule.py):
// the same formulas, evaluated in double and stored, like every learning rate, as float32.
#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <numbers>

#include "tandem/errors.h"
#include "tandem/optimizers.h"

namespace tandem::schedules {

namespace {

using Json = nlohmann::ordered_json;

std::string keras_object(const char* class_name, const Json& config) {
  return Json{{"module", "keras.optimizers.schedules"}, {"class_name", class_name}, {"config", config}, {"registered_name", nullptr}}.dump();
}

void check_rate(const char* schedule, const char* what, double v) {
  if (!(v >= 0.0) || !std::isfinite(v)) throw ValueError(std::string(schedule) + ": " + what + " must be a finite number >= 0, got " + std::to_string(v));
}

void check_steps(const char* schedule, const char* what, int64_t v, int64_t least) {
  if (v < least) throw ValueError(std::string(schedule) + ": " + what + " must be >= " + std::to_string(least) + ", got " + std::to_string(v));
}

class Exponential final : public LearningRateSchedule {
 public:
  Exponential(double initial, int64_t steps, double rate, bool staircase) : initial_(initial), steps_(steps), rate_(rate), staircase_(staircase) {
    check_rate("ExponentialDecay", "initial_learning_rate", initial);
    check_steps("ExponentialDecay", "decay_steps", steps, 1);
    check_rate("ExponentialDecay", "decay_rate", rate);
  }
  double operator()(int64_t step) const override {
    double p = static_cast<double>(step) / static_cast<double>(steps_);
    if (staircase_) p = std::floor(p);
    return initial_ * std::pow(rate_, p);
  }
  std::string config_json() const override {
    return keras_object("ExponentialDecay", {{"initial_learning_rate", initial_}, {"decay_steps", steps_}, {"decay_rate", rate_},
                                             {"staircase", staircase_}, {"name", "ExponentialDecay"}});
  }

 private:
  double initial_;
  int64_t steps_;
  double rate_;
  bool staircase_;
};

class Cosine final : public LearningRateSchedule {
 public:
  Cosine(double initial, int64_t steps, CosineDecayOptions o) : initial_(initial), steps_(steps), o_(o) {
    check_rate("CosineDecay", "initial_learning_rate", initial);
    check_steps("CosineDecay", "decay_steps", steps, 1);
    if (o.alpha < 0.0 || o.alpha > 1.0) throw ValueError("CosineDecay: alpha must be in [0, 1], got " + std::to_string(o.alpha));
    check_steps("CosineDecay", "warmup_steps", o.warmup_steps, 0);
    if (o.warmup_target) check_rate("CosineDecay", "warmup_target", *o.warmup_target);
    if (o.warmup_steps > 0 && !o.warmup_target) throw ValueError("CosineDecay: warmup_steps needs a warmup_target");
  }
  double operator()(int64_t step) const override {
    const double s = static_cast<double>(step), decay = static_cast<double>(steps_), warmup = static_cast<double>(o_.warmup_steps);
    if (!o_.warmup_target) return decayed(std::min(s, decay), initial_);
    const double t = std::min(s, decay + warmup);
    if (t < warmup) return (*o_.warmup_target - initial_) * (t / warmup) + initial_;
    return decayed(t - warmup, *o_.warmup_target);
  }
  std::string config_json() const override {
    return keras_object("CosineDecay", {{"initial_learning_rate", initial_}, {"decay_steps", steps_}, {"alpha", o_.alpha}, {"name", "CosineDecay"},
                                        {"warmup_target", o_.warmup_target ? Json(*o_.warmup_target) : Json(nullptr)},
                                        {"warmup_steps", o_.warmup_steps}});
  }

 private:
  double decayed(double step, double from) const {
    const double cosine = 0.5 * (1.0 + std::cos(std::numbers::pi * step / static_cast<double>(steps_)));
    return from * ((1.0 - o_.alpha) * cosine + o_.alpha);
  }
  double initial_;
  int64_t steps_;
  CosineDecayOptions o_;
};

class Piecewise final : public LearningRateSchedule {
 public:
  Piecewise(std::vector<int64_t> boundaries, std::vector<double> values) : boundaries_(std::move(boundaries)), values_(std::move(values)) {
    if (boundaries_.empty() || values_.size() != boundaries_.size() + 1)
      throw ValueError("PiecewiseConstantDecay: the length of boundaries should be 1 less than the length of values, and at least 1; got " +
                       std::to_string(boundaries_.size()) + " boundaries and " + std::to_string(values_.size()) + " values");
    if (!std::is_sorted(boundaries_.begin(), boundaries_.end())) throw ValueError("PiecewiseConstantDecay: boundaries must be increasing");
    for (double v : values_) check_rate("PiecewiseConstantDecay", "each value", v);
  }
  double operator()(int64_t step) const override {
    // The first boundary not below step: values[i] covers (boundaries[i-1], boundaries[i]].
    return values_[static_cast<std::size_t>(std::lower_bound(boundaries_.begin(), boundaries_.end(), step) - boundaries_.begin())];
  }
  std::string config_json() const override {
    return keras_object("PiecewiseConstantDecay", {{"boundaries", boundaries_}, {"values", values_}, {"name", "PiecewiseConstant"}});
  }

 private:
  std::vector<int64_t> boundaries_;
  std::vector<double> values_;
};

}  // namespace

SchedulePtr ExponentialDecay(double initial_learning_rate, int64_t decay_steps, double decay_rate, bool staircase) {
  return std::make_shared<Exponential>(initial_learning_rate, decay_steps, decay_rate, staircase);
}
SchedulePtr CosineDecay(double initial_learning_rate, int64_t decay_steps, const CosineDecayOptions& options) {
  return std::make_shared<Cosine>(initial_learning_rate, decay_steps, options);
}
SchedulePtr PiecewiseConstantDecay(std::vector<int64_t> boundaries, std::vector<double> values) {
  return std::make_shared<Piecewise>(std::move(boundaries), std::move(values));
}

}  // namespace tandem::schedules
