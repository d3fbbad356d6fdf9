#include "runtime/comm_worker.h"

#include "runtime/tracer.h"
#include "tandem/errors.h"
#include "tandem/watchdog.h"

namespace tandem::runtime {

namespace {
// The device thread waits this long for a collective before it sleeps.
constexpr auto kWaitSpin = std::chrono::microseconds(20);
}  // namespace

CommWorker::CommWorker(std::string device, core::TaskThread& thread, Tracer* tracer, int track)
    : device_(std::move(device)), tracer_(tracer), track_(track), thread_(&thread) {}

CommWorker::~CommWorker() = default;

int CommWorker::add_slot(std::function<void()> work, std::string label) {
  if (started_) throw Error("internal: a communication slot added after the first collective started");
  const int index = static_cast<int>(slots_.size());
  slots_.push_back({[this, work = std::move(work), index] {
                      const double t0 = tracer_ ? tracer_->now() : 0;
                      work();  // a throw skips the trace record: the step is abandoned anyway
                      if (tracer_) tracer_->record(track_, slots_[static_cast<std::size_t>(index)].label.c_str(), t0, tracer_->now());
                    },
                    std::move(label)});
  return index;
}

void CommWorker::start(int slot) {
  started_ = true;
  Slot& s = slots_[static_cast<std::size_t>(slot)];
  s.ticket = thread_->post(s.run);
}

void CommWorker::timed_out(uint64_t ticket) const {
  // The collective still running is this step's oldest unfinished one.
  const Slot* running = nullptr;
  for (const Slot& s : slots_)
    if (s.ticket <= ticket && !thread_->finished(s.ticket) && (!running || s.ticket < running->ticket)) running = &s;
  const std::string label = running ? running->label : "a collective";
  throw TimeoutError("watchdog: " + device_ + " communication thread did not finish " + label + " within " +
                     std::to_string(watchdog_timeout().count()) + " ms");
}

void CommWorker::wait(int slot) {
  const uint64_t ticket = slots_[static_cast<std::size_t>(slot)].ticket;
  if (!thread_->wait(ticket, core::Clock::now() + watchdog_timeout(), kWaitSpin)) timed_out(ticket);
}

void CommWorker::drain() {
  if (!started_ || thread_->posted() == 0) return;
  const uint64_t last = thread_->posted() - 1;
  const auto deadline = core::Clock::now() + watchdog_timeout();
  for (;;) {
    try {
      if (!thread_->wait(last, deadline)) timed_out(last);
      return;
    } catch (const TimeoutError&) {
      throw;
    } catch (...) {  // a failed collective: the step is being abandoned, its cause reported elsewhere
    }
  }
}

}  // namespace tandem::runtime
