// What communication kernels of one program see: the communicator, this program's rank in it,
// and the device's communication queue (the runtime's communication thread implements it).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "comm/communicator.h"

namespace tandem::comm {

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

// A subset of the ranks with collectives of its own (the replicas of one pipeline stage).
struct CommGroup {
  std::vector<int64_t> ranks;           // ascending, numbered as in the whole communicator
  Communicator* communicator = nullptr; // over just these ranks
  int rank = 0;                         // this program's rank among them
};

struct CommContext {
  Communicator* communicator = nullptr;
  int rank = 0;
  CommQueue* queue = nullptr;
  std::vector<int> bucket_slots;  // bucket index -> the queue slot its all-reduce runs in
  std::vector<CommGroup> groups;  // the subsets this program's collectives span
  // The group over `ranks`; throws if this program is not bound to one.
  const CommGroup& group(const std::vector<int64_t>& ranks) const {
    for (const CommGroup& g : groups)
      if (g.ranks == ranks) return g;
    throw Error("internal: a collective over a group of ranks this program was not bound to");
  }
};

}  // namespace tandem::comm
