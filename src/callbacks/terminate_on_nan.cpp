#include <cmath>
#include <iostream>

#include "tandem/callbacks.h"
#include "tandem/model.h"

namespace tandem {
namespace {

class TerminateOnNaNCallback : public Callback {
 public:
  void on_train_batch_end(int64_t batch, const Logs& logs) override {
    const auto loss = logs.find("loss");
    if (loss == logs.end() || std::isfinite(loss->second)) return;
    // With verbose 1 the live progress bar has left the cursor at the end of its line.
    if (params_.verbose == 1) std::cout << '\n';
    std::cout << "Batch " << batch << ": Invalid loss, terminating training" << std::endl;
    model_->stop_training = true;
  }
};

}  // namespace

namespace callbacks {
CallbackPtr TerminateOnNaN() { return std::make_shared<TerminateOnNaNCallback>(); }
}  // namespace callbacks

}  // namespace tandem
