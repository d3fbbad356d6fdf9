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

// The communicator over a strategy's devices (in rank order), waiting at most `timeout`: the
// local one, or where they are the devices of several workers ("worker:W/cpu:0", the same count
// on each, worker by worker) a SpanningCommunicator over them (comm/spanning.h).
std::shared_ptr<Communicator> devices_communicator(const std::vector<std::string>& devices, std::chrono::milliseconds timeout);

}  // namespace tandem::comm
