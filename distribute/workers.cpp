// What every strategy shares about processes: device lists that name the devices of several
// workers ("worker:W/cpu:0"), this worker's part of them, and combining what the host reads after
// a step with the other workers'. MultiWorkerMirrored spreads one replica per device over the
// workers; any other strategy given across_workers(...) places its work on all of their devices
// the same way it would on one process's, and each worker runs the programs of its own.
#include <algorithm>
#include <cstdlib>
#include <thread>

#include "backend/device.h"
#include "comm/world.h"
#include "core/device_name.h"
#include "distribute/strategy.h"
#include "tandem/errors.h"

namespace tandem::distribute {

std::vector<std::string> across_workers(const std::vector<std::string>& local) {
  const Worker me = comm::world();
  if (me.count == 1) return local;
  std::vector<std::string> all;
  for (int w = 0; w < me.count; ++w)
    for (const std::string& d : local) all.push_back(std::string("worker:").append(std::to_string(w)).append("/").append(d));
  return all;
}

std::vector<std::string> distinct_devices(const std::string& strategy, const std::vector<std::string>& devices) {
  if (devices.empty()) throw ValueError(strategy + ": expected at least one device, got none");
  std::vector<std::string> names;
  int prefixed = 0;
  for (const std::string& d : devices) {
    const core::OnWorker on = core::read_worker_prefix(d);
    if (on.worker == -2) throw ValueError(strategy + ": device '" + d + "': expected \"worker:W/<device>\" with a worker number W");
    std::string name = backend::parse_device(on.device).str();
    if (on.worker >= 0) {
      const int count = comm::world().count;
      if (on.worker >= count)
        throw ValueError(strategy + ": device '" + d + "' is on worker " + std::to_string(on.worker) + ", but this process is one of " +
                         std::to_string(count) + " worker" + (count == 1 ? "" : "s"));
      name = std::string("worker:").append(std::to_string(on.worker)).append("/").append(name);
      ++prefixed;
    }
    if (std::find(names.begin(), names.end(), name) != names.end()) throw ValueError(strategy + ": device '" + name + "' is listed twice");
    names.push_back(name);
  }
  if (prefixed && prefixed != static_cast<int>(names.size()))
    throw ValueError(strategy + ": " + std::to_string(prefixed) + " of the " + std::to_string(names.size()) +
                     " devices name their worker (\"worker:W/...\"), the others do not; name the worker of all or of none");
  return names;
}

void Strategy::span_workers(const std::string& strategy, const std::vector<std::string>& program_devices) {
  local_devices_.clear();
  std::vector<int> worker_of;
  for (const std::string& d : program_devices) {
    const core::OnWorker on = core::read_worker_prefix(d);
    worker_of.push_back(on.worker);
    if (on.worker < 0 || on.worker == comm::world().rank) local_devices_.push_back(on.device);
  }
  const Worker me = comm::world();
  if (worker_of.empty() || worker_of.front() < 0 || me.count == 1) return;
  // Program p runs on worker p / L: the lowering numbers the communication over all of them.
  const auto per_worker = static_cast<int>(program_devices.size()) / me.count;
  for (std::size_t p = 0; p < worker_of.size(); ++p)
    if (per_worker * me.count != static_cast<int>(program_devices.size()) || worker_of[p] != static_cast<int>(p) / per_worker)
      throw ValueError(strategy + ": over the devices of several workers, each of the " + std::to_string(me.count) +
                       " workers needs the same number of devices, one worker's after another's (as across_workers lists them); device " +
                       std::to_string(p) + " in the strategy's order is '" + program_devices[p] + "'");
  across_ = comm::worker_communicator();
  first_program_ = me.rank * per_worker;
  program_count_ = per_worker;
}

int Strategy::workers() const { return across_ ? across_->size() : 1; }

int Strategy::threads_per_device() const {
  // TANDEM_NUM_THREADS caps the threads of the whole process (like OMP_NUM_THREADS).
  const char* env = std::getenv("TANDEM_NUM_THREADS");
  const int cores = env && std::atoi(env) > 0 ? std::atoi(env) : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // The machine's cores are shared by the workers on it too.
  const int processes = across_ ? comm::workers_on_this_machine() : 1;
  return std::max(1, cores / processes / static_cast<int>(devices().size()));
}

void Strategy::sum_over_workers(std::vector<double>& values) const {
  if (across_ && !values.empty()) across_->all_reduce(comm::world().rank, values.data(), values.size(), DType::F64, comm::ReduceOp::Sum);
}

void Strategy::from_worker(int worker, void* data, std::size_t bytes) const {
  if (across_ && bytes) across_->broadcast(comm::world().rank, data, bytes, worker);
}

void Strategy::gather_rows(std::byte* host, std::size_t row_bytes, const graph::Layout& layout, const std::vector<int>& places) const {
  if (!across_) return;
  // Who holds each place: the lowest worker among those that do.
  const int me = comm::world().rank, count = layout.is_split() ? static_cast<int>(layout.shares.size()) : 1;
  std::vector<double> holders(static_cast<std::size_t>(count * workers()), 0.0);
  for (int p : places)
    if (p < count) holders[static_cast<std::size_t>(p * workers() + me)] = 1;
  sum_over_workers(holders);
  for (int p = 0; p < count; ++p) {
    int owner = 0;
    while (owner < workers() && holders[static_cast<std::size_t>(p * workers() + owner)] == 0) ++owner;
    if (owner == workers()) throw Error("internal: no worker holds part " + std::to_string(p) + " of a fetched value");
    if (!layout.is_split()) return from_worker(owner, host, row_bytes);
    from_worker(owner, host + static_cast<std::size_t>(layout.offset(p)) * row_bytes,
                static_cast<std::size_t>(layout.shares[static_cast<std::size_t>(p)]) * row_bytes);
  }
}

}  // namespace tandem::distribute
