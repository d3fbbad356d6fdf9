#include "comm/local.h"

#include "comm/inprocess.h"
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

}  // namespace tandem::comm
