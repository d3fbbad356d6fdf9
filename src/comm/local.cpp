#include "comm/local.h"

#include "comm/inprocess.h"
#include "comm/spanning.h"
#include "comm/world.h"
#include "core/device_name.h"
#if TANDEM_WITH_NCCL
#include "comm/nccl/nccl_communicator.h"
#endif

namespace tandem::comm {

std::shared_ptr<Communicator> local_communicator(const std::vector<std::string>& devices) {
#if TANDEM_WITH_NCCL
  bool whole_gpus = devices.size() > 1;
  for (const std::string& d : devices) {
    const std::optional<core::DeviceName> n = core::read_device_name(d);
    whole_gpus = whole_gpus && n && n->kind == "gpu" && n->logical < 0;
  }
  if (whole_gpus) return std::make_shared<NcclCommunicator>(devices);
#endif
  return std::make_shared<InProcessCommunicator>(devices);
}

std::shared_ptr<Communicator> devices_communicator(const std::vector<std::string>& devices, std::chrono::milliseconds timeout) {
  const int me = world().rank;
  std::vector<std::string> mine;
  bool spanning = false;
  for (const std::string& d : devices) {
    const core::OnWorker on = core::read_worker_prefix(d);
    spanning = spanning || on.worker >= 0;
    if (on.worker < 0 || on.worker == me) mine.push_back(on.device);
  }
  std::shared_ptr<Communicator> local = local_communicator(mine);
  local->set_timeout(timeout);
  if (!spanning || world().count == 1) return local;  // "worker:0/..." in a process started alone: its own
  const std::shared_ptr<Communicator> between = worker_communicator();
  between->set_timeout(timeout);  // the mailbox's waits
  auto all = std::make_shared<SpanningCommunicator>(local, worker_mailbox(), me, world().count);
  all->set_timeout(timeout);
  return all;
}

}  // namespace tandem::comm
