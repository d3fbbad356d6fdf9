#include "backend/device.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "core/registry.h"
#include "tandem/errors.h"

namespace tandem::backend {

namespace {
core::Registry<std::string, DeviceFactory>& device_kinds() {
  static core::Registry<std::string, DeviceFactory> r("device kind");  // built on first use, like the kernels'
  return r;
}

// The names parse_device accepts, for its error: "kind" and "kind:N" of each registered kind, then
// the GPU forms, named even in a build without CUDA (where "gpu:N" then says why it is unavailable).
std::string accepted_forms() {
  std::vector<std::string> forms;
  for (const auto& [kind, slot] : device_kinds().entries())
    if (kind != "gpu") forms.insert(forms.end(), {"\"" + kind + "\"", "\"" + kind + ":N\""});
  if (device_kinds().find("gpu")) forms.push_back("\"gpu\"");
  forms.insert(forms.end(), {"\"gpu:N\"", "\"gpu:N/L\" (logical GPU L of GPU N)"});
  std::string s;
  for (std::size_t i = 0; i < forms.size(); ++i) s += (i == 0 ? "" : i + 1 == forms.size() ? " or " : ", ") + forms[i];
  return s;
}
}  // namespace

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (device_ && data_) device_->release(data_, bytes_);
    device_ = o.device_, data_ = o.data_, bytes_ = o.bytes_;
    o.device_ = nullptr, o.data_ = nullptr, o.bytes_ = 0;
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() {
  if (device_ && data_) device_->release(data_, bytes_);
}

HostBuffer& HostBuffer::operator=(HostBuffer&& o) noexcept {
  if (this != &o) {
    if (data_) device_ ? device_->release_host(data_, bytes_) : std::free(data_);
    device_ = o.device_, data_ = o.data_, bytes_ = o.bytes_;
    o.device_ = nullptr, o.data_ = nullptr, o.bytes_ = 0;
  }
  return *this;
}

HostBuffer::~HostBuffer() {
  if (data_) device_ ? device_->release_host(data_, bytes_) : std::free(data_);
}

HostBuffer allocate_ordinary_host(std::size_t bytes) {
  const std::size_t rounded = (std::max<std::size_t>(64, bytes) + 63) / 64 * 64;
  auto* data = static_cast<std::byte*>(std::aligned_alloc(64, rounded));
  if (!data) throw Error(std::string("cannot allocate ").append(std::to_string(bytes)).append(" bytes of host memory"));
  std::memset(data, 0, rounded);
  return HostBuffer(nullptr, data, bytes);
}

void Device::release_host(std::byte* data, std::size_t) { std::free(data); }

void Device::copy_in_step(void* device_dst, const void* device_src, std::size_t bytes) {
  if (bytes) std::memcpy(device_dst, device_src, bytes);  // a device whose memory is host memory
}

DeviceKindRegistration::DeviceKindRegistration(const char* kind, DeviceFactory factory, std::source_location loc) {
  device_kinds().add(kind, std::move(factory), loc);
}

DeviceName parse_device(const std::string& device) {
  const std::optional<DeviceName> name = core::read_device_name(device);
  const std::string kind = device.substr(0, device.find(':'));
  const bool known = device_kinds().find(kind) != nullptr;
  if (!known && kind == "gpu" && name)
    throw ValueError("device '" + device + "' is not available: this build of Tandem has no GPU backend (it was built without CUDA); use \"cpu\" devices");
  if (!known || !name)
    throw ValueError("unknown device '" + device + "'; expected " + accepted_forms());
  return *name;
}

std::string unavailable_reason(const std::string& name) {
  try {
    open_device(name);
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

Device& open_device(const std::string& device, int threads) {
  static std::mutex mutex;
  static std::map<std::pair<std::string, int>, std::unique_ptr<Device>> devices;
  const DeviceName name = parse_device(device);
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::lock_guard lock(mutex);
  auto& d = devices[{name.str(), threads}];
  if (!d) d = (*device_kinds().find(name.kind))(name, threads);
  return *d;
}

}  // namespace tandem::backend
