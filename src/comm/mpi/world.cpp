// MPI's side of comm/world.h: MPI_Init_thread on first use in a process a launcher started,
// MPI_Finalize at exit — or MPI_Abort when a collective between workers broke, since the others
// may be waiting in one that can never finish and MPI_Finalize would wait for them too.
#include "comm/world.h"

#include <mpi.h>

#include <cstdio>
#include <cstdlib>

#include "comm/mpi/mpi_communicator.h"
#include "tandem/errors.h"

namespace tandem::comm {

namespace {
// Open MPI's mpirun, PMIx (srun --mpi=pmix, prterun) and PMI-2 (srun --mpi=pmi2) set these.
bool started_by_launcher() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK"})
    if (std::getenv(name)) return true;
  return false;
}

struct MpiProcess {
  distribute::Worker me;
  int on_this_machine = 1;
  std::shared_ptr<MpiCommunicator> comm;
  MpiProcess() {
    if (!started_by_launcher()) return;
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) throw Error("MultiWorkerMirrored: MPI_Init_thread failed");
    if (provided < MPI_THREAD_SERIALIZED)
      throw Error("MultiWorkerMirrored: the MPI library does not support calls from several threads (MPI_THREAD_SERIALIZED)");
    MPI_Comm_rank(MPI_COMM_WORLD, &me.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &me.count);
    MPI_Comm machine;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, me.rank, MPI_INFO_NULL, &machine);
    MPI_Comm_size(machine, &on_this_machine);
    MPI_Comm_free(&machine);
    comm = std::make_shared<MpiCommunicator>(MPI_COMM_WORLD);
    std::atexit(finish);
  }
  static void finish();
};

// Never destroyed: finish() ends MPI at exit, and a static's destructor would run before it.
MpiProcess& process() {
  static MpiProcess* p = new MpiProcess;
  return *p;
}

void MpiProcess::finish() {
  MpiProcess& p = process();
  if (p.comm && p.comm->broken()) {
    std::fflush(stdout), std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  p.comm.reset();
  MPI_Finalize();
}
}  // namespace

distribute::Worker world() { return process().me; }

int workers_on_this_machine() { return process().on_this_machine; }

std::shared_ptr<Communicator> worker_communicator() {
  MpiProcess& p = process();
  if (!p.comm) throw Error("internal: no communicator between workers in a process started alone");
  return p.comm;
}

std::shared_ptr<Mailbox> worker_mailbox() {
  MpiProcess& p = process();
  if (!p.comm) throw Error("internal: no mailbox between workers in a process started alone");
  return p.comm;
}

}  // namespace tandem::comm
