// A callback that throws out of fit at the end of training step `at` (counted from 1 over the
// fit): an interrupted run, for the resume tests.
#pragma once

#include <tandem/tandem.h>

#include <stdexcept>

class ThrowAtStep : public tandem::Callback {
 public:
  explicit ThrowAtStep(int64_t at) : at_(at) {}
  void on_train_batch_end(int64_t, const tandem::Logs&) override {
    if (++steps_ == at_) throw std::runtime_error("interrupted");
  }

 private:
  int64_t at_, steps_ = 0;
};
