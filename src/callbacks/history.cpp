#include "tandem/callbacks.h"

namespace tandem {

// A History belongs to one fit() run, so it starts empty each time training begins.
void History::on_train_begin(const Logs&) {
  history.clear();
  epoch.clear();
}

void History::on_epoch_end(int epoch_index, const Logs& logs) {
  epoch.push_back(epoch_index);
  for (const auto& [key, value] : logs) history[key].push_back(value);
}

}  // namespace tandem
