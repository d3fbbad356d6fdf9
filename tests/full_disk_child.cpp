// A process whose saves fail for lack of space, then go on: it saves weights and a whole model (HDF5
// and a .keras archive) under a file size limit of 8 KB (the writes fail as on a full disk), then lifts the limit,
// saves elsewhere, loads that file back and exits 0. test_weights_file runs it and checks the
// exit status (a failed write once left HDF5 broken, and every such process crashed at exit).
//
//   full_disk_child DIR: writes DIR/good.weights.h5 before the limit and DIR/later.weights.h5 after
//   full_disk_child --training-state DIR: a BackupAndRestore backup in DIR/backup whose weights file
//     fits under the limit and whose training state (a long History) does not; test_training_callbacks runs it
#include <sys/resource.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <tandem/tandem.h>

namespace {

namespace tl = tandem::layers;

// Lowers the file size limit to `bytes` (writes past it then fail with EFBIG, as writes on a full
// disk fail with ENOSPC) and returns the limit there was.
rlimit limit_file_size(rlim_t bytes) {
  rlimit limit{};
  getrlimit(RLIMIT_FSIZE, &limit);
  const rlimit small{bytes, limit.rlim_max};
  std::signal(SIGXFSZ, SIG_IGN);
  setrlimit(RLIMIT_FSIZE, &small);
  return limit;
}

std::string contents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

int training_state(const std::string& dir) {
  namespace fs = std::filesystem;
  tandem::set_random_seed(1);
  tandem::Sequential model({tl::InputLayer({1}), tl::Dense(1)});
  model.compile({.optimizer = "sgd", .loss = "mse"});
  const tandem::Tensor x({4, 1}, tandem::DType::F32), y({4, 1}, tandem::DType::F32);
  const std::string backup = dir + "/backup", state = backup + "/training_state.json";
  // One batch per epoch; one backup, after 2000 epochs, whose History makes the state the larger file.
  model.fit(x, y, {.epochs = 2000, .batch_size = 4, .verbose = 0,
                   .callbacks = {tandem::callbacks::BackupAndRestore(backup, {.save_freq = 2000, .delete_checkpoint = false})}});
  const auto weights_bytes = fs::file_size(backup + "/backup-a.weights.h5"), state_bytes = fs::file_size(state);
  if (state_bytes < weights_bytes + 2048) {
    std::printf("setup: the training state (%ju bytes) is not larger than the weights file (%ju bytes)\n", uintmax_t(state_bytes), uintmax_t(weights_bytes));
    return 1;
  }
  const std::string before = contents(state);
  const rlimit limit = limit_file_size(weights_bytes + 1024);
  try {  // resumes at the end of epoch 2000 and backs up when it ends
    model.fit(x, y, {.epochs = 2001, .batch_size = 4, .verbose = 0,
                     .callbacks = {tandem::callbacks::BackupAndRestore(backup, {.delete_checkpoint = false})}});
    std::printf("backed up under the limit\n");
    return 1;
  } catch (const tandem::Error& e) {
    std::printf("refused: %s\n", e.what());
  }
  setrlimit(RLIMIT_FSIZE, &limit);
  if (contents(state) != before) {
    std::printf("the training state changed\n");
    return 1;
  }
  std::printf("the training state is unchanged\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--training-state") return training_state(argv[2]);
  if (argc != 2) {
    std::fprintf(stderr, "usage: full_disk_child [--training-state] DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  tandem::set_random_seed(1);
  tandem::Sequential model({tl::InputLayer({64}), tl::Dense(128, "relu"), tl::Dense(10)});
  model.compile({.optimizer = "adam", .loss = "mse"});
  model.save_weights(dir + "/good.weights.h5");

  const rlimit limit = limit_file_size(8192);
  for (const std::string& path : {dir + "/good.weights.h5", dir + "/model.h5", dir + "/model.keras"}) {
    try {
      if (path.ends_with(".weights.h5")) model.save_weights(path);
      else model.save(path);
      std::printf("saved %s under the limit\n", path.c_str());
      return 1;
    } catch (const tandem::Error& e) {
      std::printf("refused: %s\n", e.what());
    }
  }
  setrlimit(RLIMIT_FSIZE, &limit);

  model.save_weights(dir + "/later.weights.h5");
  tandem::Sequential other({tl::InputLayer({64}), tl::Dense(128, "relu"), tl::Dense(10)});
  other.load_weights(dir + "/later.weights.h5");
  const auto a = model.get_weights(), b = other.get_weights();
  for (std::size_t i = 0; i < a.size(); ++i)
    for (int64_t j = 0; j < a[i].size(); ++j)
      if (a[i].item(j) != b[i].item(j)) {
        std::printf("the file saved after the failure differs\n");
        return 1;
      }
  std::printf("saved elsewhere\n");
  return 0;
}
