// A device's communication thread: runs that device's collectives in the order they are started,
// so they overlap the device's compute. Slots are fixed when a Plan is bound; starting and
// waiting allocate nothing.
#pragma once

#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tandem::runtime {

class Tracer;

class CommWorker {
 public:
  CommWorker(Tracer* tracer, int track);
  ~CommWorker();
  CommWorker(const CommWorker&) = delete;
  CommWorker& operator=(const CommWorker&) = delete;

  int add_slot(std::function<void()> work, std::string label);  // at bind time
  void start(int slot);
  void wait(int slot);  // rethrows what the collective threw (a timeout, say)
  void drain();         // waits until every started collective has finished (after a failure)

 private:
  void loop();
  struct Slot {
    std::function<void()> work;
    std::string label;
    bool done = false;
    std::exception_ptr error;
  };
  std::vector<Slot> slots_;
  std::vector<int> queue_;  // ring buffer of started slots
  std::size_t head_ = 0, tail_ = 0, queued_ = 0;
  bool stop_ = false;
  bool busy_ = false;
  std::mutex mutex_;
  std::condition_variable cv_;
  Tracer* tracer_;
  int track_;
  std::thread thread_;
};

}  // namespace tandem::runtime
