#include "runtime/tracer.h"

#include <cstdio>
#include <fstream>

#include "tandem/errors.h"

namespace tandem::runtime {

Tracer::Tracer() : origin_(std::chrono::steady_clock::now()) {}

void Tracer::enable(bool on) { enabled_ = on; }

double Tracer::now() const {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - origin_).count();
}

void Tracer::record(int track, const char* name, double begin_us, double end_us, const char* dtype) {
  if (!enabled_) return;
  std::lock_guard lock(mutex_);
  events_.push_back({track, name, begin_us, end_us, dtype});
}

void Tracer::clear() {
  std::lock_guard lock(mutex_);
  events_.clear();
}

std::vector<Tracer::Event> Tracer::events() const {
  std::lock_guard lock(mutex_);
  return events_;
}

void Tracer::write_json(const std::string& path) const {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    if (!out) throw Error("trace: cannot write " + tmp);
    out << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
    bool first = true;
    for (std::size_t t = 0; t < names_.size(); ++t) {
      out << (first ? "" : ",\n") << "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":" << t
          << ",\"args\":{\"name\":\"" << names_[t] << "\"}}";
      first = false;
    }
    for (const Event& e : events()) {
      out << (first ? "" : ",\n") << "{\"ph\":\"X\",\"pid\":1,\"tid\":" << e.track << ",\"name\":\"" << e.name
          << "\",\"ts\":" << e.begin << ",\"dur\":" << (e.end - e.begin);
      if (e.dtype) out << ",\"args\":{\"dtype\":\"" << e.dtype << "\"}";
      out << "}";
      first = false;
    }
    out << "\n]}\n";
    if (!out.flush()) throw Error("trace: writing " + tmp + " failed");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) throw Error("trace: cannot rename " + tmp + " to " + path);
}

}  // namespace tandem::runtime
