// Records what each device worker and communication thread did during a traced step, and writes
// it as Chrome trace-event JSON (open in https://ui.perfetto.dev or chrome://tracing).
#pragma once

#include <chrono>
#include <mutex>
#include <string>
#include <vector>

namespace tandem::runtime {

class Tracer {
 public:
  Tracer();
  void set_track_names(std::vector<std::string> names) { names_ = std::move(names); }
  // The track of that name, added after the others if it is new (the host's input pipeline).
  int track(const std::string& name) {
    for (std::size_t t = 0; t < names_.size(); ++t)
      if (names_[t] == name) return static_cast<int>(t);
    names_.push_back(name);
    return static_cast<int>(names_.size()) - 1;
  }
  void enable(bool on);
  bool enabled() const { return enabled_; }
  double now() const;  // microseconds since construction
  // `dtype`, when given, is the kernel's dtype (its "args" in the trace: what mixed precision ran
  // in which dtype).
  void record(int track, const char* name, double begin_us, double end_us, const char* dtype = nullptr);
  void clear();
  struct Event {
    int track;
    std::string name;
    double begin, end;
    const char* dtype = nullptr;  // a static name (dtype_name), or null
  };
  std::vector<Event> events() const;
  void write_json(const std::string& path) const;  // via a temporary file and rename

 private:
  std::chrono::steady_clock::time_point origin_;
  std::vector<std::string> names_;
  bool enabled_ = false;
  mutable std::mutex mutex_;
  std::vector<Event> events_;
};

}  // namespace tandem::runtime
