// What communication kernels of one program see: the communicator, this program's rank in it,
// and the device's communication thread.
#pragma once

#include <vector>

#include "distribute/comm/communicator.h"
#include "runtime/comm_worker.h"

namespace tandem::runtime {

struct CommContext {
  distribute::comm::Communicator* communicator = nullptr;
  int rank = 0;
  CommWorker* worker = nullptr;
  std::vector<int> bucket_slots;  // bucket index -> the worker slot its all-reduce runs in
};

}  // namespace tandem::runtime
