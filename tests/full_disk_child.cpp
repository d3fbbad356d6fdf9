// A process whose saves fail for lack of space, then go on: it saves weights and a whole model (HDF5
// and a .keras archive) under a file size limit of 8 KB (the writes fail as on a full disk), then lifts the limit,
// saves elsewhere, loads that file back and exits 0. test_weights_file runs it and checks the
// exit status (a failed write once left HDF5 broken, and every such process crashed at exit).
//
//   full_disk_child DIR: writes DIR/good.weights.h5 before the limit and DIR/later.weights.h5 after
#include <sys/resource.h>

#include <csignal>
#include <cstdio>
#include <string>

#include <tandem/tandem.h>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: full_disk_child DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  namespace tl = tandem::layers;
  tandem::set_random_seed(1);
  tandem::Sequential model({tl::InputLayer({64}), tl::Dense(128, "relu"), tl::Dense(10)});
  model.compile({.optimizer = "adam", .loss = "mse"});
  model.save_weights(dir + "/good.weights.h5");

  rlimit limit{};
  getrlimit(RLIMIT_FSIZE, &limit);
  const rlimit small{8192, limit.rlim_max};
  std::signal(SIGXFSZ, SIG_IGN);  // a write past the limit then fails with EFBIG, as one on a full disk with ENOSPC
  setrlimit(RLIMIT_FSIZE, &small);
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
