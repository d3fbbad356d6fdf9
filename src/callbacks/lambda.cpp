#include <utility>

#include "tandem/callbacks.h"

namespace tandem {
namespace {

class EpochEndLambda : public Callback {
 public:
  explicit EpochEndLambda(std::function<void(int, const Logs&)> fn) : fn_(std::move(fn)) {}
  void on_epoch_end(int epoch, const Logs& logs) override {
    if (fn_) fn_(epoch, logs);
  }

 private:
  std::function<void(int, const Logs&)> fn_;
};

}  // namespace

namespace callbacks {
CallbackPtr Lambda(std::function<void(int epoch, const Logs&)> on_epoch_end) {
  return std::make_shared<EpochEndLambda>(std::move(on_epoch_end));
}
}  // namespace callbacks

}  // namespace tandem
