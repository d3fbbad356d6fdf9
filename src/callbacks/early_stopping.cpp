// EarlyStopping (keras/src/callbacks/early_stopping.py, Keras 3).
#include <iostream>

#include "callbacks/monitor.h"
#include "tandem/callbacks.h"
#include "tandem/errors.h"
#include "tandem/model.h"

namespace tandem {
namespace {

using callbacks::EarlyStoppingOptions;

class EarlyStoppingCallback final : public Callback {
 public:
  explicit EarlyStoppingCallback(EarlyStoppingOptions o) : o_(std::move(o)), monitor_("EarlyStopping", o_.monitor, o_.mode, o_.min_delta) {
    if (o_.patience < 0) throw ValueError("EarlyStopping: patience must be >= 0, got " + std::to_string(o_.patience));
  }

  void on_train_begin(const Logs&) override {
    wait_ = 0, stopped_epoch_ = 0, best_epoch_ = 0;
    best_.reset(), best_weights_.reset();
    warned_ = false;
  }

  void on_epoch_end(int epoch, const Logs& logs) override {
    const auto it = logs.find(o_.monitor);
    if (it == logs.end()) {
      if (!std::exchange(warned_, true))
        std::cerr << "UserWarning: Early stopping conditioned on metric `" << o_.monitor << "` which is not available. Available metrics are: "
                  << keys(logs) << std::endl;
      return;
    }
    if (epoch < o_.start_from_epoch) return;
    const double current = it->second;
    if (o_.restore_best_weights && !best_weights_) best_weights_ = model_->get_weights(), best_epoch_ = epoch;
    ++wait_;
    if (monitor_.improves(current, best_)) {
      best_ = current, best_epoch_ = epoch;
      if (o_.restore_best_weights) best_weights_ = model_->get_weights();
      if (!o_.baseline || monitor_.improves(current, o_.baseline)) wait_ = 0;
      return;
    }
    if (wait_ >= o_.patience && epoch > 0) {
      stopped_epoch_ = epoch;
      model_->stop_training = true;
    }
  }

  void on_train_end(const Logs&) override {
    if (stopped_epoch_ > 0 && o_.verbose > 0) std::cout << "Epoch " << stopped_epoch_ + 1 << ": early stopping" << std::endl;
    if (!o_.restore_best_weights || !best_weights_) return;
    if (o_.verbose > 0) std::cout << "Restoring model weights from the end of the best epoch: " << best_epoch_ + 1 << "." << std::endl;
    model_->set_weights(*best_weights_);
  }

 private:
  static std::string keys(const Logs& logs) {
    std::string out;
    for (const auto& [k, v] : logs) out += (out.empty() ? "" : ",") + k;
    return out;
  }

  EarlyStoppingOptions o_;
  callbacks::detail::Monitor monitor_;
  int wait_ = 0, stopped_epoch_ = 0, best_epoch_ = 0;
  std::optional<double> best_;
  std::optional<std::vector<Tensor>> best_weights_;
  bool warned_ = false;
};

}  // namespace

namespace callbacks {
CallbackPtr EarlyStopping(const EarlyStoppingOptions& options) { return std::make_shared<EarlyStoppingCallback>(options); }
}  // namespace callbacks

}  // namespace tandem
