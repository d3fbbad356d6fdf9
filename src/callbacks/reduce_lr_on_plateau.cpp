// ReduceLROnPlateau (keras/src/callbacks/reduce_lr_on_plateau.py) and LearningRateScheduler
// (learning_rate_scheduler.py): the two callbacks that set the optimizer's learning rate. fit makes
// the host's values current before epoch hooks and pushes what they wrote to the devices. Both add
// "learning_rate" to the epoch's logs, as Keras 3's do (its fit does not add it otherwise).
#include <cmath>
#include <iostream>

#include "callbacks/checkpoint_path.h"
#include "callbacks/learning_rate.h"
#include "callbacks/monitor.h"
#include "tandem/callbacks.h"
#include "tandem/errors.h"
#include "tandem/model.h"
#include "tandem/optimizers.h"

namespace tandem {
namespace {

using callbacks::ReduceLROnPlateauOptions;

Optimizer& optimizer_of(Model* model, const char* callback) {
  if (!model || !model->optimizer()) throw ValueError(std::string(callback) + ": the model has no optimizer (compile it before fit)");
  return *model->optimizer();
}

// The epoch's "learning_rate" as Keras 3's two callbacks log it at epoch end: the optimizer's rate
// before this epoch's reduction, or a schedule's for the next step, as float32.
void log_learning_rate(Model* model, const char* callback, Logs& logs) {
  logs["learning_rate"] = callbacks::detail::current_learning_rate(optimizer_of(model, callback));
}

class ReduceLROnPlateauCallback final : public Callback {
 public:
  explicit ReduceLROnPlateauCallback(ReduceLROnPlateauOptions o)
      : o_(std::move(o)), monitor_("ReduceLROnPlateau", o_.monitor, o_.mode, o_.min_delta) {
    if (!(o_.factor >= 0.0 && o_.factor < 1.0))
      throw ValueError("ReduceLROnPlateau does not support a factor >= 1.0 (or negative). Received factor=" +
                       callbacks::detail::python_float_repr(o_.factor));
  }

  void on_train_begin(const Logs&) override { best_.reset(), cooldown_counter_ = 0, wait_ = 0; }
  void add_epoch_logs(int, Logs& logs) override { log_learning_rate(model_, "ReduceLROnPlateau", logs); }

  void on_epoch_end(int epoch, const Logs& logs) override {
    const auto it = logs.find(o_.monitor);
    if (it == logs.end()) {
      std::cerr << "UserWarning: Learning rate reduction is conditioned on metric `" << o_.monitor << "` which is not available." << std::endl;
      return;
    }
    const bool cooling = cooldown_counter_ > 0;
    if (cooling) --cooldown_counter_, wait_ = 0;
    if (monitor_.improves(it->second, best_)) {
      best_ = it->second, wait_ = 0;
      return;
    }
    if (cooldown_counter_ > 0 || ++wait_ < o_.patience) return;
    Optimizer& optimizer = optimizer_of(model_, "ReduceLROnPlateau");
    const double old_lr = optimizer.learning_rate();
    if (old_lr > static_cast<double>(static_cast<float>(o_.min_lr))) {
      const double new_lr = std::max(old_lr * o_.factor, o_.min_lr);
      optimizer.set_learning_rate(new_lr);
      if (o_.verbose > 0)
        std::cout << "\nEpoch " << epoch + 1 << ": ReduceLROnPlateau reducing learning rate to " << callbacks::detail::python_float_repr(new_lr)
                  << "." << std::endl;
      cooldown_counter_ = o_.cooldown, wait_ = 0;
    }
  }

 private:
  ReduceLROnPlateauOptions o_;
  callbacks::detail::Monitor monitor_;
  std::optional<double> best_;
  int cooldown_counter_ = 0, wait_ = 0;
};

class LearningRateSchedulerCallback final : public Callback {
 public:
  LearningRateSchedulerCallback(std::function<double(int, double)> schedule, int verbose)
      : schedule_(std::move(schedule)), verbose_(verbose) {
    if (!schedule_) throw ValueError("LearningRateScheduler: the schedule is empty");
  }
  void add_epoch_logs(int, Logs& logs) override { log_learning_rate(model_, "LearningRateScheduler", logs); }
  void on_epoch_begin(int epoch, const Logs&) override {
    Optimizer& optimizer = optimizer_of(model_, "LearningRateScheduler");
    const double lr = schedule_(epoch, optimizer.learning_rate());
    if (!std::isfinite(lr) || lr < 0)
      throw ValueError("LearningRateScheduler: the schedule returned " + callbacks::detail::python_float_repr(lr) + " for epoch " +
                       std::to_string(epoch) + "; expected a finite learning rate >= 0");
    optimizer.set_learning_rate(lr);
    if (verbose_ > 0)
      std::cout << "\nEpoch " << epoch + 1 << ": LearningRateScheduler setting learning rate to " << callbacks::detail::python_float_repr(lr)
                << "." << std::endl;
  }

 private:
  std::function<double(int, double)> schedule_;
  int verbose_;
};

}  // namespace

namespace callbacks {
CallbackPtr ReduceLROnPlateau(const ReduceLROnPlateauOptions& options) { return std::make_shared<ReduceLROnPlateauCallback>(options); }
CallbackPtr LearningRateScheduler(std::function<double(int epoch, double learning_rate)> schedule, int verbose) {
  return std::make_shared<LearningRateSchedulerCallback>(std::move(schedule), verbose);
}
}  // namespace callbacks

}  // namespace tandem
