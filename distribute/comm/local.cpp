#include "distribute/comm/local.h"

#include "backend/device.h"
#include "distribute/comm/inprocess.h"
#if TANDEM_WITH_NCCL
#include "distribute/comm/nccl/nccl_communicator.h"
#endif

namespace tandem::distribute::comm {

std::shared_ptr<Communicator> local_communicator(const std::vector<std::string>& devices) {
#if TANDEM_WITH_NCCL
  bool whole_gpus = devices.size() > 1;
  for (const std::string& d : devices) {
    const backend::DeviceName n = backend::parse_device(d);
    whole_gpus = whole_gpus && n.kind == "gpu" && n.logical < 0;
  }
  if (whole_gpus) return std::make_shared<NcclCommunicator>(devices);
#endif
  return std::make_shared<InProcessCommunicator>(devices);
}

}  // namespace tandem::distribute::comm
