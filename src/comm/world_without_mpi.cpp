// comm/world.h in a build without MPI: every process is a worker of its own.
#include <cstdlib>
#include <string>

#include "comm/world.h"
#include "tandem/errors.h"

namespace tandem::comm {

namespace {
int launched_workers() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS"})
    if (const char* v = std::getenv(name)) return std::atoi(v);
  return 1;
}
}  // namespace

distribute::Worker world() {
  if (const int n = launched_workers(); n > 1)
    throw Error("MultiWorkerMirrored: this process was started as one of " + std::to_string(n) +
                " workers, but this build of Tandem has no MPI: install libopenmpi-dev (scripts/install-deps.sh) and rebuild");
  return {};
}

int workers_on_this_machine() { return 1; }

std::shared_ptr<Communicator> worker_communicator() {
  throw Error("MultiWorkerMirrored: this build of Tandem has no MPI");
}

std::shared_ptr<Mailbox> worker_mailbox() { throw Error("a strategy over the devices of several workers: this build of Tandem has no MPI"); }

}  // namespace tandem::comm
