// What the communication kernels of every backend share: the communicator and rank a node runs
// among, the checks of its attributes, an all-reduce bucket's memory ranges, and the queue slot
// that runs a collective on the device's communication thread. The backends differ only in how
// the work reaches the device's memory (directly, or staged through host memory).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "backend/kernel_registry.h"
#include "comm/comm_context.h"

namespace tandem::backend {

comm::CommContext& comm_of(const KernelInit& k);
// The node's Communication (every communication node carries one).
const graph::Communication& communication_of(const KernelInit& k);
// How an all-reduce node's values travel.
comm::Wire wire_of(const KernelInit& k);

// Who a collective runs among: the communicator when its group spans every rank, else the
// group's own.
struct Peers {
  comm::Communicator* communicator;
  int rank;
};
Peers peers_of(const KernelInit& k);
// A collective node's ranks, checked against the rank count of its group.
Peers collective(const KernelInit& k, const char* op);
// A point-to-point node's peer: another rank of the communicator.
int peer_of(const KernelInit& k, const char* op);

// A bucket's gradients as (start, elements) ranges: one range when the memory planner laid them
// out back to back (padding between them is reduced too, harmlessly), otherwise one per gradient.
struct BucketRange {
  void* start;
  std::size_t count;
};
std::vector<BucketRange> bucket_ranges(const KernelInit& k, std::size_t* total_bytes);

// Registers `work` as the all-reduce of the node's bucket; returns the slot its wait finds.
int add_bucket_slot(const KernelInit& k, std::function<void()> work, const std::string& label);
// all_reduce_wait on any device: waits on the communication thread for the slot that the
// bucket's all_reduce_start registered.
KernelFn make_all_reduce_wait(const KernelInit& k);
// A kernel that runs `work` to completion on the communication thread, in order with the
// all-reduce buckets the device has started (every rank meets the same sequence).
KernelFn run_on_queue(const KernelInit& k, std::function<void()> work, const std::string& label);

}  // namespace tandem::backend
