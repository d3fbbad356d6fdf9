// What communication kernels of one program see: the communicator, this program's rank in it,
// and the device's communication queue (the runtime's communication thread implements it).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "comm/communicator.h"

namespace tandem::distribute::comm {

// Runs a device's communication work off its compute thread, in the order it is started. Work is
// added when a Plan is bound; starting and waiting happen every step and allocate nothing.
class CommQueue {
 public:
  virtual ~CommQueue() = default;
  virtual int add_slot(std::function<void()> work, std::string label) = 0;  // at bind time, before any start
  virtual void start(int slot) = 0;
  // Rethrows what the work threw; raises TimeoutError when it does not finish within the
  // watchdog's limit.
  virtual void wait(int slot) = 0;
};

struct CommContext {
  Communicator* communicator = nullptr;
  int rank = 0;
  CommQueue* queue = nullptr;
  std::vector<int> bucket_slots;  // bucket index -> the queue slot its all-reduce runs in
};

}  // namespace tandem::distribute::comm
