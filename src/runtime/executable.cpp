#include "runtime/executable.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>

#include "comm/comm_context.h"
#include "graph/op_registry.h"
#include "runtime/comm_worker.h"
#include "runtime/device_threads.h"
#include "tandem/errors.h"
#include "tandem/watchdog.h"

namespace tandem::runtime {

namespace {
// The caller sleeps soon while it waits for the devices: on two cores its spinning would slow the
// workers it waits for.
constexpr auto kWaitSpin = std::chrono::microseconds(5);
}  // namespace

// What one action (a block, for one micro-batch) runs: its kernels, bound to that micro-batch's
// memory.
struct BoundAction {
  std::vector<backend::KernelFn> fns;
  std::vector<const graph::Node*> nodes;  // each kernel's node, for traces and the watchdog
  std::vector<const char*> dtypes;        // each kernel's dtype, for traces
  std::string label;                      // "forward 3", "backward 3", "update": a trace slice
};

std::atomic<bool>& overlap_setting() {
  static std::atomic<bool> on{[] {
    const char* v = std::getenv("TANDEM_INPUT_OVERLAP");
    return !v || std::string(v) != "0";
  }()};
  return on;
}

bool input_overlap() { return overlap_setting().load(); }
void set_input_overlap(bool on) { overlap_setting().store(on); }

// Where an input of a device that copies asynchronously is written: one of two inboxes, moved
// into the step's memory (`arena`) by the step that reads it.
struct Inbox {
  void* arena = nullptr;
  std::array<std::byte*, 2> at{};
  std::array<std::size_t, 2> filled{};  // bytes written into each, since that set was handed out
};

const char* phase_name(graph::Phase p) {
  switch (p) {
    case graph::Phase::Forward: return "forward";
    case graph::Phase::Metric: return "metrics";
    case graph::Phase::Backward: return "backward";
    case graph::Phase::Update: return "update";
  }
  return "?";
}

struct Executable::Bound {
  backend::DeviceBuffer arena;
  std::vector<std::vector<std::vector<void*>>> pointers;  // [micro-batch][node][output]
  std::vector<std::vector<BoundAction>> actions;          // [block][micro-batch]
  // The kernel running now, for the watchdog.
  std::atomic<const BoundAction*> current_action{nullptr};
  std::atomic<int> current{-1};
  std::unique_ptr<CommWorker> comm_worker;
  comm::CommContext comm;
  // The step as the device recorded it (a CUDA graph), recorded and replayed from the second step
  // on: the first runs as issued, so that libraries set themselves up outside the recording.
  std::unique_ptr<backend::Device::StepRecording> recording;
  bool issued_once = false;
  bool unrecordable = false;  // the device does not record, or could not record this step
  std::atomic<bool> replaying{false};  // for the watchdog
  // Inputs through inboxes (empty: the device copies synchronously, into the arena): two sets,
  // each with the event recorded after its copies, and the set the posted step moves in first.
  std::vector<Inbox> inboxes;
  std::array<backend::DeviceBuffer, 2> inbox_memory;
  std::array<std::unique_ptr<backend::Device::CopyEvent>, 2> written;
  int draining = -1;  // set before the step is posted; -1: nothing new to move in
};

Executable::Executable(std::shared_ptr<const compile::Plan> plan, std::vector<backend::Device*> devices,
                       const std::function<void*(int, int)>& variable, std::shared_ptr<comm::Communicator> comm)
    : plan_(std::move(plan)), comm_(std::move(comm)), devices_(std::move(devices)) {
  if (devices_.size() != plan_->programs.size())
    throw Error("internal: a plan of " + std::to_string(plan_->programs.size()) + " programs bound to " +
                std::to_string(devices_.size()) + " devices");
  std::vector<std::string> tracks;
  for (const compile::Program& prog : plan_->programs) {
    tracks.push_back(prog.device + " compute");
    tracks.push_back(prog.device + " communication");
  }
  tracer_.set_track_names(tracks);
  if (comm_) make_groups();
  for (std::size_t p = 0; p < plan_->programs.size(); ++p) {
    const compile::Program& prog = plan_->programs[p];
    const graph::Graph& g = prog.graph;
    backend::Device& device = *devices_[p];
    DeviceThreads& threads = device_threads(device);
    device_workers_.push_back(&threads.worker);
    auto b = std::make_unique<Bound>();
    b->arena = device.allocate(prog.memory.arena_bytes);
    if (comm_) {
      b->comm_worker = std::make_unique<CommWorker>(prog.device, threads.communication, &tracer_, static_cast<int>(2 * p + 1));
      const int rank = prog.rank >= 0 ? prog.rank : static_cast<int>(p);
      b->comm = {comm_.get(), rank, b->comm_worker.get(), {}, {}};
      for (const auto& [ranks, group] : groups_) {
        const auto at = std::find(ranks.begin(), ranks.end(), static_cast<int64_t>(rank));
        if (at != ranks.end()) b->comm.groups.push_back({ranks, group.get(), static_cast<int>(at - ranks.begin())});
      }
    }
    const int micro_batches = prog.micro_batches();
    b->pointers.assign(static_cast<std::size_t>(micro_batches), std::vector<std::vector<void*>>(static_cast<std::size_t>(g.size())));
    for (int j = 0; j < micro_batches; ++j) {
      auto& pointers = b->pointers[static_cast<std::size_t>(j)];
      for (const compile::Block& block : prog.blocks)
        for (int id : block.nodes) {
          const graph::Node& n = g.node(id);
          auto& ptrs = pointers[static_cast<std::size_t>(id)];
          for (std::size_t o = 0; o < n.outputs.size(); ++o) {
            const int64_t off = prog.memory.address(id, static_cast<int>(o), j);
            if (n.def->source == ops::Source::Variable)
              ptrs.push_back(variable(static_cast<int>(p), static_cast<int>(n.attrs.i("var"))));
            else if (off == compile::MemoryPlan::kExternal)  // a view of an input (maybe of a variable)
              ptrs.push_back(pointers[static_cast<std::size_t>(n.inputs[o].node)][static_cast<std::size_t>(n.inputs[o].index)]);
            else ptrs.push_back(b->arena.data() + off);
          }
        }
    }
    void* ctx = device.kernel_context();
    for (const compile::Block& block : prog.blocks) {
      std::vector<BoundAction> per_micro(static_cast<std::size_t>(micro_batches));
      for (int j = 0; j < micro_batches; ++j) {
        // Blocks that run once per step are bound to the last micro-batch's memory.
        if (!block.per_micro_batch() && j != micro_batches - 1) continue;
        const auto& pointers = b->pointers[static_cast<std::size_t>(j)];
        BoundAction& action = per_micro[static_cast<std::size_t>(j)];
        action.label = phase_name(block.phase);
        if (block.per_micro_batch() && micro_batches > 1) action.label += " " + std::to_string(j);
        for (int id : block.nodes) {
          const graph::Node& n = g.node(id);
          if (n.def->source != ops::Source::Kernel) continue;  // the memory bound above is its value
          if (!prog.once_per_step.empty() && prog.once_per_step[static_cast<std::size_t>(id)] && j != micro_batches - 1) continue;
          backend::KernelInit init{n, {}, {}, pointers[static_cast<std::size_t>(id)], ctx, comm_ ? &b->comm : nullptr, j};
          for (graph::Value in : n.inputs) {
            init.in_types.push_back(g.type(in));
            init.in.push_back(pointers[static_cast<std::size_t>(in.node)][static_cast<std::size_t>(in.index)]);
          }
          const DType dtype = backend::kernel_dtype(g, n);
          const auto& factory = backend::find_kernel(n.op, device.kernel_kind(), dtype);
          if (auto fn = factory(init)) {
            action.fns.push_back(std::move(fn));
            action.nodes.push_back(&n);
            action.dtypes.push_back(dtype_name(dtype));
          }
        }
      }
      b->actions.push_back(std::move(per_micro));
    }
    if (input_overlap() && device.copies_asynchronously()) make_inboxes(static_cast<int>(p), *b);
    bound_.push_back(std::move(b));
  }
  stages_inputs_ = !bound_.empty() && std::all_of(bound_.begin(), bound_.end(), [](const auto& b) { return b->written[0] != nullptr; });
  for (std::size_t p = 0; p < bound_.size(); ++p) {
    device_steps_.push_back([this, p] { run_guarded(static_cast<int>(p)); });
  }
  tickets_.resize(bound_.size());
}

// Two inboxes for every input a micro-batch of the program reads, in one allocation per set.
void Executable::make_inboxes(int p, Bound& b) {
  const graph::Graph& g = plan_->programs[static_cast<std::size_t>(p)].graph;
  backend::Device& device = *devices_[static_cast<std::size_t>(p)];
  std::vector<std::size_t> sizes;
  for (const auto& pointers : b.pointers)
    for (int i = 0; i < g.size(); ++i) {
      const auto& ptrs = pointers[static_cast<std::size_t>(i)];
      if (g.node(i).def->source != ops::Source::Feed || ptrs.empty()) continue;
      const bool seen = std::any_of(b.inboxes.begin(), b.inboxes.end(), [&](const Inbox& in) { return in.arena == ptrs[0]; });
      if (seen) continue;
      b.inboxes.push_back({ptrs[0], {}, {}});
      sizes.push_back((g.type(graph::Value{i, 0}).bytes() + 255) / 256 * 256);
    }
  std::size_t total = 0;
  for (std::size_t s : sizes) total += s;
  for (int set = 0; set < 2; ++set) {
    b.inbox_memory[static_cast<std::size_t>(set)] = device.allocate(std::max<std::size_t>(total, 1));
    std::byte* at = b.inbox_memory[static_cast<std::size_t>(set)].data();
    for (std::size_t k = 0; k < b.inboxes.size(); ++k) b.inboxes[k].at[static_cast<std::size_t>(set)] = at, at += sizes[k];
    b.written[static_cast<std::size_t>(set)] = device.make_copy_event();
  }
  if (!b.written[0]) b.inboxes.clear(), b.inbox_memory = {};  // the device has nothing to wait for after all
}

void Executable::write_feed(int p, void* at, const void* host, std::size_t bytes) {
  Bound& b = *bound_[static_cast<std::size_t>(p)];
  backend::Device& device = *devices_[static_cast<std::size_t>(p)];
  if (b.inboxes.empty()) {
    device.copy_in(at, host, bytes);
    return;
  }
  const auto set = static_cast<std::size_t>(writing_);
  if (fresh_) {  // what this set held was moved in by an earlier step
    for (auto& other : bound_)
      for (Inbox& in : other->inboxes) in.filled[set] = 0;
    fresh_ = false;
  }
  for (Inbox& in : b.inboxes)
    if (in.arena == at) {
      device.copy_in_async(in.at[set], host, bytes);
      in.filled[set] = std::max(in.filled[set], bytes);
      wrote_ = true;
      return;
    }
  throw Error("internal: " + device.name() + " has no input at the address written");
}

void Executable::wait_for_writes() {
  if (!wrote_) return;
  for (auto& b : bound_)
    if (!b->inboxes.empty()) b->written[static_cast<std::size_t>(writing_)]->record();
  for (auto& b : bound_)
    if (!b->inboxes.empty()) b->written[static_cast<std::size_t>(writing_)]->wait();
}

// One communicator per group of ranks that some collective spans, shared by its members; a group
// of every rank uses the communicator itself.
void Executable::make_groups() {
  for (const compile::Program& prog : plan_->programs)
    for (int i = 0; i < prog.graph.size(); ++i) {
      const std::optional<graph::Communication>& c = prog.graph.node(i).communication;
      if (!c || c->group.empty() || static_cast<int>(c->group.size()) >= comm_->size()) continue;
      const std::vector<int64_t> ranks(c->group.begin(), c->group.end());
      if (!groups_.count(ranks)) groups_[ranks] = comm_->subgroup(ranks);
    }
}

void Executable::abort_communication(const std::string& why) {
  if (comm_) comm_->abort(why);
  for (auto& [ranks, group] : groups_) group->abort(why);
}

void Executable::reset_communication() {
  if (comm_) comm_->reset();
  for (auto& [ranks, group] : groups_) group->reset();
}

Executable::~Executable() {
  if (!abandoned_) return;
  // A stalled step still runs kernels over this arena and these closures: wait for it, and drop
  // its errors (reported when it was abandoned) so no later step on the device sees them.
  for (std::size_t p = 0; p < device_workers_.size(); ++p)
    while (!device_workers_[p]->finished(tickets_[p])) try {
        device_workers_[p]->wait(tickets_[p], core::Clock::now() + watchdog_timeout());
      } catch (...) {  // an error of an earlier task may come back before this one has finished
      }
  for (auto& b : bound_)
    if (b->comm_worker) try {
        b->comm_worker->drain();
      } catch (...) {
      }
}

void* Executable::feed(int program, const std::string& name, int micro_batch) const {
  const graph::Graph& g = plan_->programs[static_cast<std::size_t>(program)].graph;
  for (int i = 0; i < g.size(); ++i)
    if (g.node(i).def->source == ops::Source::Feed && g.node(i).attrs.s("name") == name) {
      const auto& ptrs = bound_[static_cast<std::size_t>(program)]->pointers[static_cast<std::size_t>(micro_batch)][static_cast<std::size_t>(i)];
      return ptrs.empty() ? nullptr : ptrs[0];  // empty: the step does not read this input
    }
  return nullptr;
}

const void* Executable::fetch(int program, int index) const {
  const compile::Program& prog = plan_->programs[static_cast<std::size_t>(program)];
  const graph::Value v = prog.fetches[static_cast<std::size_t>(index)];
  if (!v.valid())
    throw Error("internal: fetch " + std::to_string(index) + " does not live on " + prog.device + " (see the plan's fetch sites)");
  return bound_[static_cast<std::size_t>(program)]->pointers.back()[static_cast<std::size_t>(v.node)][static_cast<std::size_t>(v.index)];
}

void Executable::copy_fetch(int program, int index, void* host_dst, std::size_t bytes) const {
  device(program).copy_out(host_dst, fetch(program, index), bytes);
}

std::size_t Executable::arena_bytes(int program) const { return plan_->programs[static_cast<std::size_t>(program)].memory.arena_bytes; }

void Executable::run_program(int p) {
  Bound& b = *bound_[static_cast<std::size_t>(p)];
  backend::Device& device = *devices_[static_cast<std::size_t>(p)];
  if (b.draining >= 0) {  // the inputs written since the last step: moved in, after their copies
    const auto set = static_cast<std::size_t>(b.draining);
    b.written[set]->order_compute();
    for (const Inbox& in : b.inboxes)
      if (in.filled[set]) device.copy_in_step(in.arena, in.at[set], in.filled[set]);
  }
  // A program that communicates waits on other threads between its kernels, and a traced one
  // times each kernel: both issue their kernels one by one.
  const bool replayable = !b.comm_worker && !tracer_.enabled() && !b.unrecordable;
  if (replayable && !b.recording && b.issued_once) {
    b.recording = device.record([this, p] { issue_program(p); });  // may be kept: replays call it
    b.unrecordable = !b.recording;
  }
  struct ClearOnExit {
    std::atomic<bool>& flag;
    ~ClearOnExit() { flag.store(false, std::memory_order_relaxed); }
  } clear{b.replaying};
  if (replayable && b.recording) {
    b.replaying.store(true, std::memory_order_relaxed);
    b.recording->replay();
  } else {
    issue_program(p);
    b.issued_once = true;
  }
  device.synchronize();
}

void Executable::issue_program(int p) {
  Bound& b = *bound_[static_cast<std::size_t>(p)];
  const bool tracing = tracer_.enabled();
  for (const compile::Action& a : plan_->schedule[static_cast<std::size_t>(p)]) {
    const BoundAction& action = b.actions[static_cast<std::size_t>(a.block)][static_cast<std::size_t>(a.micro_batch)];
    b.current_action.store(&action, std::memory_order_relaxed);
    const double action_start = tracing ? tracer_.now() : 0;
    for (std::size_t i = 0; i < action.fns.size(); ++i) {
      b.current.store(static_cast<int>(i), std::memory_order_relaxed);
      if (!tracing) {
        action.fns[i]();
        continue;
      }
      const double t0 = tracer_.now();
      action.fns[i]();
      tracer_.record(2 * p, action.nodes[i]->op.c_str(), t0, tracer_.now(), action.dtypes[i]);
    }
    if (tracing) tracer_.record(2 * p, action.label.c_str(), action_start, tracer_.now());
  }
  b.current.store(-1, std::memory_order_relaxed);
}

void Executable::run_guarded(int p) {
  try {
    run_program(p);
  } catch (const comm::Aborted&) {
    throw;  // a consequence, not the cause
  } catch (...) {
    std::string what = "unknown error";
    try {
      throw;
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    {
      std::lock_guard lock(error_mutex_);
      if (!root_error_) root_error_ = std::current_exception();
    }
    abort_communication(plan_->programs[static_cast<std::size_t>(p)].device + " failed: " + what);
    throw;
  }
}

std::string Executable::describe_running(int p) const {
  const Bound& b = *bound_[static_cast<std::size_t>(p)];
  const std::string& device = plan_->programs[static_cast<std::size_t>(p)].device;
  const int k = b.current.load(std::memory_order_relaxed);
  const BoundAction* action = b.current_action.load(std::memory_order_relaxed);
  if (b.replaying.load(std::memory_order_relaxed)) return device + " is running its recorded step (a CUDA graph of every kernel)";
  if (k < 0 || !action) return device + " has not started or has just finished its step";
  const graph::Node& n = *action->nodes[static_cast<std::size_t>(k)];
  return device + " is in kernel '" + n.op + "'" + (n.scope.empty() ? "" : " of '" + n.scope + "'") + " (kernel " +
         std::to_string(k + 1) + " of " + std::to_string(action->nodes.size()) + " of its block)";
}

std::string Executable::wait_for_devices(std::exception_ptr& first_error) {
  const auto deadline = core::Clock::now() + watchdog_timeout();
  std::string running;
  for (std::size_t p = 0; p < device_workers_.size(); ++p) {
    try {
      if (!device_workers_[p]->wait(tickets_[p], deadline, kWaitSpin))
        running += (running.empty() ? "" : "; ") + describe_running(static_cast<int>(p));
    } catch (...) {
      if (!first_error) first_error = std::current_exception();
    }
  }
  return running;
}

void Executable::settle() {
  if (!abandoned_) return;
  std::exception_ptr ignored;  // its errors were consequences of the stall
  const std::string running = wait_for_devices(ignored);
  if (!running.empty())
    throw TimeoutError("watchdog: a step abandoned earlier has still not finished within " + std::to_string(watchdog_timeout().count()) +
                       " ms: " + running);
  for (auto& b : bound_)
    if (b->comm_worker) b->comm_worker->drain();
  reset_communication();
  abandoned_ = false;
}

void Executable::run(const std::function<void()>& meanwhile) {
  settle();  // the step that outlived the watchdog must end before this one starts
  const auto limit = std::to_string(watchdog_timeout().count()) + " ms";
  root_error_ = nullptr;
  // The inbox set written since the last step goes to this one; later writes go to the other.
  for (auto& b : bound_)
    if (!b->inboxes.empty()) {
      if (wrote_) b->written[static_cast<std::size_t>(writing_)]->record();
      b->draining = wrote_ ? writing_ : -1;
    }
  if (wrote_) writing_ ^= 1, wrote_ = false, fresh_ = true;
  for (std::size_t p = 0; p < device_workers_.size(); ++p) tickets_[p] = device_workers_[p]->post(device_steps_[p]);
  std::exception_ptr meanwhile_error;
  meanwhile_hidden_ = false;
  if (meanwhile) {
    try {
      meanwhile();
    } catch (...) {
      meanwhile_error = std::current_exception();
    }
    for (std::size_t p = 0; p < device_workers_.size(); ++p) meanwhile_hidden_ = meanwhile_hidden_ || !device_workers_[p]->finished(tickets_[p]);
  }
  std::exception_ptr first_error;
  const std::string running = wait_for_devices(first_error);
  if (!running.empty()) {
    // Like NCCL's watchdog: abort the communicator so the devices blocked in a collective on
    // the stalled one return, and report what the stalled ones are doing.
    abandoned_ = true;
    const std::string what = "watchdog: the step did not finish within " + limit + ": " + running;
    abort_communication(what);
    throw TimeoutError(what);
  }
  if (!first_error) {
    if (meanwhile_error) std::rethrow_exception(meanwhile_error);
    return;
  }
  // Abandon the step: let every communication thread finish what it was given (the aborted
  // communicator fails it at once), make the communicator usable again, report the cause.
  for (auto& b : bound_)
    if (b->comm_worker) b->comm_worker->drain();
  reset_communication();
  if (root_error_) std::rethrow_exception(root_error_);
  std::rethrow_exception(first_error);
}

}  // namespace tandem::runtime
