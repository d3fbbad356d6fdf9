// Distribution strategies: how a compiled model is lowered onto devices.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tandem::distribute {

class Strategy;  // defined in the library; users only construct and pass it
using StrategyPtr = std::shared_ptr<Strategy>;

struct DefaultOptions {
  // Cut each training batch into this many micro-batches, run forward and backward on each in
  // turn and update once with their summed gradients: the same update as the whole batch, with
  // the activations of one micro-batch in memory at a time. (A batch whose rows do not divide
  // uses the largest count below that does.)
  int64_t micro_batches = 1;
};

// One device ("cpu", "cpu:0"): the whole program runs there, on all of this machine's cores.
StrategyPtr Default(const std::string& device = "cpu:0", const DefaultOptions& options = {});

// What data parallelism keeps split over its devices instead of whole on each (ZeRO's stages,
// PyTorch's FSDP). None: DDP, every device holds every weight, gradient and optimizer slot.
// Weights (ZeRO stage 3, FSDP's FULL_SHARD): each device holds a block of rows of each weight
// whose first axis its devices divide, and of that weight's gradient and optimizer slots;
// the weight is all-gathered just before its forward reads it and again before its backward,
// and freed after each; its gradient is reduce-scattered into the blocks, and each device
// updates its own.
enum class ShardLevel { None, Weights };

struct MirroredOptions {
  int64_t bucket_bytes = 25 << 20;  // gradients per all-reduce (PyTorch DDP's default, 25 MB)
  bool all_reduce_bf16 = false;     // send gradients as bfloat16: half the bytes, sums in float32
  int64_t timeout_ms = 60000;       // a collective that waits longer raises an error
  // Synchronise every k batches: k consecutive batches run as the micro-batches of one step, their
  // gradients summed locally (like DDP's no_sync) and all-reduced once, for one update with
  // their mean — k batches make one update, and all-reduce traffic falls k-fold. An epoch's last
  // batches that do not fill a group of k equal batches update as a group of their own.
  int64_t sync_every = 1;
  ShardLevel shard = ShardLevel::None;
};

// Data parallelism over devices ("cpu:0", "cpu:1", ...; virtual CPU devices share the cores):
// each replica trains on its share of every batch and gradients are averaged by all-reduce.
StrategyPtr Mirrored(const std::vector<std::string>& devices, const MirroredOptions& options = {});

struct MultiWorkerMirroredOptions {
  int64_t bucket_bytes = 25 << 20;  // gradients per all-reduce, as MirroredOptions
  bool all_reduce_bf16 = false;     // send gradients as bfloat16, within and between workers
  // A collective that waits longer raises an error naming the workers that did not answer; the
  // process then ends the whole job (a collective between processes cannot be resumed).
  int64_t timeout_ms = 60000;
  ShardLevel shard = ShardLevel::None;  // as MirroredOptions: each weight's blocks over every device of every worker
};

// Data parallelism across processes (workers) started together by `mpirun -np N` or Slurm's
// `srun`, each with its `local_devices` (the same count on every worker): Mirrored over every
// device of every worker. Each worker reads its own rows of every batch (the shuffle is the
// chief's), gradients are summed within each worker and then between workers over MPI, metrics
// are summed over all of them, and the initial weights are the chief's (worker 0). Only the chief
// prints progress and writes checkpoints; every worker can load them. A process started alone is
// a single worker. Needs a build with MPI.
StrategyPtr MultiWorkerMirrored(const std::vector<std::string>& local_devices = {"cpu:0"}, const MultiWorkerMirroredOptions& options = {});

// This process among the workers it was started with (mpirun, srun): {0, 1} when started alone.
struct Worker {
  int rank = 0;
  int count = 1;
  bool chief() const { return rank == 0; }  // prints progress and writes checkpoints
};
Worker this_worker();

// The devices `local` of every worker this process was started with, worker by worker, named
// "worker:W/<device>" ({"worker:0/cpu:0", "worker:1/cpu:0"} for two workers): given these, any
// strategy places its work on the devices of all the processes as it would on one process's —
// Pipeline's stages on different workers, ModelSplit's layers or mesh across them — and each
// worker runs the part on its own devices, sending activations and gradients to the others over
// MPI. Every worker builds the same model and strategy and calls fit together. A process started
// alone gets `local` back.
std::vector<std::string> across_workers(const std::vector<std::string>& local = {"cpu:0"});

// For each axis of a weight, the mesh axis it is split over, or "" where it is whole: a Dense
// kernel (in, out) split by columns is {"", "model"}, by rows {"model", ""}.
using TensorLayout = std::vector<std::string>;

// Regular expressions over weight paths ("dense_1/kernel"), each with a layout; a weight takes
// the layout of the first expression found in its path (as Keras's re.search), and is whole on
// every device if none is. Optimizer slots follow their weight.
using LayoutMap = std::vector<std::pair<std::string, TensorLayout>>;

enum class PipelineSchedule {
  GPipe,     // every micro-batch's forward, then every backward: M micro-batches in flight
  OneFOneB,  // PipeDream-flush: after a warm-up, one forward and one backward in turn; stage s of S
             // holds at most S − s micro-batches
  Interleaved,  // Megatron's interleaved 1F1B: each device holds virtual_stages chunks of layers
                // (chunk c on device c mod S), which shrinks the bubble by that factor; the
                // micro-batches must be a multiple of the devices per replica
};

struct PipelineOptions {
  // The first layer of each stage after the first, by name ({"dense_2"}: two stages, the second
  // from layer dense_2 on). Empty: `stages` stages (0: one per device) cut where the estimated
  // cost of forward and backward (their FLOPs) balances. With virtual_stages = v the model is
  // cut into stages · v chunks (boundaries then name the first layer of each chunk after the first).
  std::vector<std::string> boundaries{};
  int64_t stages = 0;
  int64_t virtual_stages = 1;  // chunks per device, for the Interleaved schedule
  // Each batch is cut into this many micro-batches; the gradients of all of them make one update,
  // the same as the whole batch's. The batch size must divide by it (an epoch's last, partial
  // batch uses the largest count below that divides its rows).
  int64_t micro_batches = 1;
  PipelineSchedule schedule = PipelineSchedule::OneFOneB;
  // Data parallelism within each stage: stage s runs on devices [s·replicas, (s+1)·replicas),
  // each replica on its share of the micro-batch's rows, the stage's gradients all-reduced among
  // its replicas (4 devices: 2 stages × 2 replicas).
  int64_t replicas = 1;
  // Tensor parallelism within each stage (and each of its replicas): its layers run on
  // `model_split` devices together, each weight split over them as `layout_map` gives it to the
  // mesh axis "model" (ModelSplit's mesh form: {{"dense/kernel", {"", "model"}}, ...}), the
  // activations' layouts following from the ops. Stage s, replica r uses the `model_split`
  // devices from (s·replicas + r)·model_split on: with devices across workers
  // (across_workers), data × pipeline × model parallelism over processes.
  int64_t model_split = 1;
  LayoutMap layout_map{};
  int64_t timeout_ms = 60000;  // a transfer between stages that waits longer raises an error
};

// Pipeline parallelism: contiguous ranges of layers (stages) on successive devices (or groups of
// replicas); activations go forward and their gradients back between stages, one micro-batch at
// a time. The loss and metrics live on the last stage.
StrategyPtr Pipeline(const std::vector<std::string>& devices, const PipelineOptions& options = {});

struct ModelSplitOptions {
  // Layer name -> device ({{"dense_2", "cpu:1"}}). A layer not named runs where the nearest named
  // layer before it runs (the first device if none is). Empty: the layers are cut into one
  // contiguous range per device with the parameter bytes balanced.
  std::map<std::string, std::string> placement{};
  int64_t timeout_ms = 60000;  // a transfer between devices that waits longer raises an error
};

// Model parallelism by placement: each layer (its forward, backward and update) runs on one
// device, and activations and their gradients travel between devices where consecutive layers
// are apart. The loss and metrics run with the model's last layer.
StrategyPtr ModelSplit(const std::vector<std::string>& devices, const ModelSplitOptions& options = {});

// Keras 3's distribution API. A mesh of devices with named axes: shape {2, 2} with axes
// {"batch", "model"} over 4 devices, device (i, j) = devices[i·2 + j].
struct DeviceMesh {
  std::vector<int64_t> shape{};
  std::vector<std::string> axis_names{};
  std::vector<std::string> devices{};
};

struct ShardingOptions {
  std::string batch_axis = "batch";  // the mesh axis that splits each batch by rows (if the mesh has it)
  int64_t timeout_ms = 60000;        // a collective that waits longer raises an error
};

// Model parallelism by sharding (Keras's ModelParallel): every layer runs on every device of the
// mesh, each holding the blocks of the weights its layout gives it (and of their optimizer
// slots); the activations' layouts follow from the ops, and collectives are inserted where they
// must change (a column-split Dense feeding a row-split Dense needs one all-reduce, after both).
StrategyPtr ModelSplit(const DeviceMesh& mesh, const LayoutMap& layout_map, const ShardingOptions& options = {});

struct TensorParallel2DOptions {
  int64_t timeout_ms = 60000;  // a collective that waits longer raises an error
};

// Tensor parallelism for Dense layers over a mesh of `rows` × `columns` devices (device (i, j) is
// devices[i·columns + j]): every layer runs on every device on the whole batch, and each Dense
// kernel (in, out) is cut into rows·columns blocks — its input features over one mesh axis and its
// units over the other, the axes taking turns from layer to layer (the first layer's units over
// both); biases and optimizer slots are split with their kernels, other weights whole. Each device
// holds its blocks and does its share of every Dense product; the activations' layouts follow from
// the ops, with collectives within a row or a column where they must change
// (docs/writing-a-strategy.md builds it step by step).
StrategyPtr TensorParallel2D(const std::vector<std::string>& devices, int64_t rows, int64_t columns,
                             const TensorParallel2DOptions& options = {});

}  // namespace tandem::distribute
