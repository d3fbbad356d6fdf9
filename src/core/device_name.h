// A device's name read into its parts. Reading a name needs no backend, so the communication layer
// (below the backend) reads the names of the devices it joins here; which kinds of device exist,
// and the error for an unknown one, are the backend's (backend::parse_device).
#pragma once

#include <optional>
#include <string>

namespace tandem::core {

// "cpu" is {"cpu", 0}, "gpu:1" is {"gpu", 1}. "gpu:0/1" is logical GPU 1 of physical GPU 0: a
// device of its own (memory, streams, worker) sharing one chip, so that every multi-device strategy
// runs on a machine with one GPU.
struct DeviceName {
  std::string kind;
  int index = 0;
  int logical = -1;  // -1: the whole device
  std::string str() const {
    std::string s = kind + ":" + std::to_string(index);
    if (logical >= 0) s.append("/").append(std::to_string(logical));  // not "/" + ...: GCC 12's false -Wrestrict
    return s;
  }
};

// The parts of "kind", "kind:N" or "gpu:N/L"; nullopt when the name has none of these forms.
std::optional<DeviceName> read_device_name(const std::string& name);

// "worker:W/<device>" names <device> of worker W among several processes, for a strategy over
// the devices of all of them (distribute::across_workers): {W, "<device>"}. A name without the
// prefix is this process's device: {-1, name}. A malformed prefix gives worker -2.
struct OnWorker {
  int worker = -1;
  std::string device;
};
OnWorker read_worker_prefix(const std::string& name);

}  // namespace tandem::core
