// The communicator between the devices of one process, chosen by what they are: NCCL when there
// are several and each is a whole GPU of its own (and the build has NCCL); otherwise the
// in-process communicator (CPU devices; logical GPUs sharing one chip, which NCCL refuses; a GPU's
// kernels then stage their buffers through pinned host memory).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.h"

namespace tandem::comm {

std::shared_ptr<Communicator> local_communicator(const std::vector<std::string>& devices);

}  // namespace tandem::comm
