// A strategy rewrites graphs into per-device programs and a schedule; it owns no kernels.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "compile/plan.h"
#include "tandem/distribute.h"

namespace tandem::distribute {

namespace comm {
class Communicator;
}

// One replica's share of a global batch: rows [row_offset, row_offset + rows).
struct Replica {
  int64_t rows = 0;
  int64_t row_offset = 0;
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual std::vector<std::string> devices() const = 0;
  // How a global batch is split across replicas; the model builds one graph per replica.
  virtual std::vector<Replica> split(int64_t rows) const { return {{rows, 0}}; }
  // Lowers the replicas' graphs (same structure, each with inputs, loss, backward and updates)
  // into a Plan with one program per device. `fetches` are read after each step, per program.
  virtual compile::Plan lower_replicas(std::vector<graph::Graph> replicas, const std::vector<graph::Value>& fetches) const = 0;
  virtual std::shared_ptr<comm::Communicator> communicator() const { return nullptr; }
  // Training steps per weight update: gradients of the others are accumulated locally.
  virtual int sync_every() const { return 1; }
  // Threads for each device's own pool: the machine's cores shared by the devices.
  int threads_per_device() const;

  compile::Plan lower(const graph::Graph& g, const std::vector<graph::Value>& fetches) const {
    return lower_replicas({g}, fetches);
  }
};

// One device's program: the graph ordered, cut into blocks, memory-planned; schedule = its blocks.
compile::Program single_program(const std::string& device, graph::Graph g, const std::vector<graph::Value>& fetches);
std::vector<compile::Action> run_all_blocks(const compile::Program& p);

}  // namespace tandem::distribute
