// The processes started together by a launcher (mpirun, srun): how many, and which one this is.
// MPI is initialised on first use, only in a process a launcher started, and finalised at exit;
// without a launcher this process is the only worker and MPI is never touched.
#pragma once

#include <memory>

#include "comm/communicator.h"
#include "comm/mailbox.h"
#include "tandem/distribute.h"

namespace tandem::comm {

// This process among the workers (the public API's `Worker`).
distribute::Worker world();
// The workers on this machine, this one included: they share its cores.
int workers_on_this_machine();

// The communicator between the workers, one rank per process (rank = worker): made once and
// shared. Raises when the build has no MPI.
std::shared_ptr<Communicator> worker_communicator();
// The same processes' mailbox, for messages between devices of different workers.
std::shared_ptr<Mailbox> worker_mailbox();

}  // namespace tandem::comm
