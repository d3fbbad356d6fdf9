// Trains the Fashion-MNIST MLP with several processes: start it with
//
//   mpirun -np 2 build/multiworker_fashion_mnist            (two workers on this machine)
//   mpirun -np 4 --hostfile hosts build/multiworker_fashion_mnist
//   srun --mpi=pmix -N 2 --ntasks-per-node=1 build/multiworker_fashion_mnist
//
// Every worker runs this same program. Each trains on its rows of every batch of 128; their
// gradients are summed before every update, so the run trains like one process with the same
// batch size. Only the chief (worker 0) prints and writes the backup; interrupted, the job started
// again continues from the backup. Started alone, it is one worker.
#include <tandem/tandem.h>

#include <cstdio>

namespace tl = tandem::layers;
namespace dist = tandem::distribute;

int main() {
  try {
    tandem::set_random_seed(42);  // the same on every worker (the chief's weights are used anyway)
    auto [train, test] = tandem::datasets::fashion_mnist();
    tandem::Sequential model({tl::InputLayer({28, 28}), tl::Flatten(), tl::Dense(256, "relu"), tl::Dense(256, "relu"), tl::Dense(10)});
    model.compile({.optimizer = tandem::optimizers::Adam(1e-3),
                   .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                   .metrics = {"accuracy"},
                   .strategy = dist::MultiWorkerMirrored({"cpu:0"})});
    const dist::Worker me = dist::this_worker();
    if (me.chief()) std::printf("%d worker(s)\n", me.count);
    model.fit(train, {.epochs = 5, .batch_size = 128, .validation_data = test,
                      .callbacks = {tandem::callbacks::BackupAndRestore("multiworker_backup")}});
    const tandem::Logs result = model.evaluate(test, {.batch_size = 512, .verbose = 0});
    if (me.chief()) std::printf("test accuracy: %.4f  test loss: %.4f\n", result.at("accuracy"), result.at("loss"));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "worker %d: %s\n", dist::this_worker().rank, e.what());
    return 1;
  }
}
