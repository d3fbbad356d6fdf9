#include "backend/cuda/cuda_device.h"

#include <cublasLt.h>
#include <cudnn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "backend/cuda/check.h"

namespace tandem::backend::cuda {

namespace {
// cuBLASLt's and cuDNN's scratch: enough for their fast algorithms at the models' shapes; a kernel
// whose algorithm wants more picks one that fits.
constexpr std::size_t kWorkspaceBytes = std::size_t(64) << 20;
// Freed page-locked staging kept per GPU for the next call; more is given back to the system.
constexpr std::size_t kKeptPinnedBytes = std::size_t(1) << 30;

void check_blas(cublasStatus_t s, const char* call, const std::string& device) {
  if (s != CUBLAS_STATUS_SUCCESS) throw Error(std::string(call) + " failed on " + device + ": cuBLAS status " + std::to_string(static_cast<int>(s)));
}
void check_dnn(cudnnStatus_t s, const char* call, const std::string& device) {
  if (s != CUDNN_STATUS_SUCCESS) throw Error(std::string(call) + " failed on " + device + ": " + cudnnGetErrorString(s));
}
}  // namespace

[[noreturn]] void throw_cuda_error(cudaError_t e, const char* call, const std::string& what) {
  throw Error(what + ": " + call + " failed with " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

int usable_gpus() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    cudaGetLastError();  // not sticky: clear it so later calls report their own errors
    throw DeviceUnavailable(std::string("no usable GPU: the CUDA runtime reports ") + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) +
                            "), so this machine has no GPU or no driver for it");
  }
  if (count == 0) throw DeviceUnavailable("no usable GPU: the CUDA runtime sees no device");
  return count;
}

CudaDevice::CudaDevice(const DeviceName& name)
    : Device(name), host_pool_([](std::byte* data) { cudaFreeHost(data); }, kKeptPinnedBytes) {
  const int count = usable_gpus();
  if (name.index >= count)
    throw DeviceUnavailable("device '" + name.str() + "' does not exist: this machine has " + std::to_string(count) + " GPU" +
                            (count == 1 ? " (gpu:0)" : "s (gpu:0 to gpu:" + std::to_string(count - 1) + ")"));
  context_.ordinal = name.index;
  const std::string what = "opening " + name.str();
  CUDA_CHECK(cudaSetDevice(context_.ordinal), what);
  CUDA_CHECK(cudaStreamCreateWithFlags(&context_.stream, cudaStreamNonBlocking), what);
  CUDA_CHECK(cudaStreamCreateWithFlags(&context_.copies, cudaStreamNonBlocking), what);
  CUDA_CHECK(cudaStreamCreateWithFlags(&context_.comm, cudaStreamNonBlocking), what);
  CUDA_CHECK(cudaDeviceGetAttribute(&context_.sm_count, cudaDevAttrMultiProcessorCount, context_.ordinal), what);
  CUDA_CHECK(cudaMalloc(&context_.workspace, kWorkspaceBytes), what);
  context_.workspace_bytes = kWorkspaceBytes;
  void* fault_word = nullptr;
  CUDA_CHECK(cudaHostAlloc(&fault_word, 3 * sizeof(unsigned long long), cudaHostAllocMapped), what);
  faults_.host = static_cast<volatile unsigned long long*>(fault_word);
  faults_.host[0] = 0;
  void* fault_device = nullptr;
  CUDA_CHECK(cudaHostGetDevicePointer(&fault_device, fault_word, 0), what);
  faults_.device = static_cast<unsigned long long*>(fault_device);
  context_.faults = &faults_;
  cublasLtHandle_t blas = nullptr;
  check_blas(cublasLtCreate(&blas), "cublasLtCreate", name.str());
  context_.blas = blas;
  cudnnHandle_t dnn = nullptr;
  check_dnn(cudnnCreate(&dnn), "cudnnCreate", name.str());
  check_dnn(cudnnSetStream(dnn, context_.stream), "cudnnSetStream", name.str());
  context_.dnn = dnn;
}

CudaDevice::~CudaDevice() {
  // Devices live for the process; at exit the driver may already be going away, so errors here
  // are not reported.
  cudaSetDevice(context_.ordinal);
  if (context_.dnn) cudnnDestroy(context_.dnn);
  if (context_.blas) cublasLtDestroy(context_.blas);
  if (context_.workspace) cudaFree(context_.workspace);
  if (context_.stream) cudaStreamDestroy(context_.stream);
  if (context_.copies) cudaStreamDestroy(context_.copies);
  if (context_.comm) cudaStreamDestroy(context_.comm);
  if (faults_.host) cudaFreeHost(const_cast<unsigned long long*>(faults_.host));
}

DeviceBuffer CudaDevice::allocate(std::size_t bytes) {
  const std::size_t rounded = (std::max<std::size_t>(256, bytes) + 255) / 256 * 256;
  const std::string what = "allocating " + std::to_string(bytes) + " bytes on " + name();
  CUDA_CHECK(cudaSetDevice(context_.ordinal), what);
  void* data = nullptr;
  CUDA_CHECK(cudaMalloc(&data, rounded), what);
  // Zeroed like the CPU device's: the plan writes before it reads, but a padding byte between
  // gradients of one all-reduce bucket is reduced too and must be a number.
  CUDA_CHECK(cudaMemsetAsync(data, 0, rounded, context_.copies), what);
  CUDA_CHECK(cudaStreamSynchronize(context_.copies), what);
  return DeviceBuffer(this, static_cast<std::byte*>(data), rounded);
}

void CudaDevice::release(std::byte* data, std::size_t) {
  cudaSetDevice(context_.ordinal);
  cudaFree(data);  // cannot report from a destructor; a failed free leaves the memory to the driver
}

// Copies run on their own stream and are waited for: they happen between steps (the runtime has
// synchronised the compute stream), from the model's thread.
void CudaDevice::copy_in(void* device_dst, const void* host_src, std::size_t bytes) {
  if (!bytes) return;
  CUDA_CHECK(cudaSetDevice(context_.ordinal), "copying to " + name());
  CUDA_CHECK(cudaMemcpyAsync(device_dst, host_src, bytes, cudaMemcpyHostToDevice, context_.copies), "copying to " + name());
  CUDA_CHECK(cudaStreamSynchronize(context_.copies), "copying to " + name());
}

void CudaDevice::copy_out(void* host_dst, const void* device_src, std::size_t bytes) {
  if (!bytes) return;
  CUDA_CHECK(cudaSetDevice(context_.ordinal), "copying from " + name());
  CUDA_CHECK(cudaMemcpyAsync(host_dst, device_src, bytes, cudaMemcpyDeviceToHost, context_.copies), "copying from " + name());
  CUDA_CHECK(cudaStreamSynchronize(context_.copies), "copying from " + name());
}

HostBuffer CudaDevice::allocate_host(std::size_t bytes) {
  std::byte* data = host_pool_.take(bytes, [&](std::size_t rounded) {
    const std::string what = std::string("allocating ").append(std::to_string(bytes)).append(" bytes of page-locked host memory for ").append(name());
    CUDA_CHECK(cudaSetDevice(context_.ordinal), what);
    void* pinned = nullptr;
    // Portable: pinned for every GPU of the process, so one staging slot serves a batch spread
    // over several of them.
    if (const cudaError_t e = cudaHostAlloc(&pinned, rounded, cudaHostAllocPortable); e != cudaSuccess) {
      cudaGetLastError();  // not the next step's error
      throw_cuda_error(e, "cudaHostAlloc", what);
    }
    return static_cast<std::byte*>(pinned);
  });
  return HostBuffer(this, data, bytes);
}

void CudaDevice::release_host(std::byte* data, std::size_t) { host_pool_.give(data); }

// From page-locked memory the copy engine reads the host memory itself and the call returns at
// once; from pageable memory CUDA stages it first, and the call returns once it has been read.
void CudaDevice::copy_in_async(void* device_dst, const void* host_src, std::size_t bytes) {
  if (!bytes) return;
  CUDA_CHECK(cudaSetDevice(context_.ordinal), "copying to " + name());
  CUDA_CHECK(cudaMemcpyAsync(device_dst, host_src, bytes, cudaMemcpyHostToDevice, context_.copies), "copying to " + name());
}

void CudaDevice::copy_in_step(void* device_dst, const void* device_src, std::size_t bytes) {
  if (!bytes) return;
  CUDA_CHECK(cudaMemcpyAsync(device_dst, device_src, bytes, cudaMemcpyDeviceToDevice, context_.stream), "copying a step's input on " + name());
}

namespace {
class CudaCopyEvent : public Device::CopyEvent {
 public:
  CudaCopyEvent(const Context& ctx, std::string device) : ctx_(ctx), device_(std::move(device)) {
    CUDA_CHECK(cudaSetDevice(ctx_.ordinal), "creating an event on " + device_);
    // Blocking: a host that waits sleeps rather than spins (it shares the cores with the decode
    // threads); no timing: cheaper to record.
    CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming | cudaEventBlockingSync), "creating an event on " + device_);
  }
  ~CudaCopyEvent() override { cudaEventDestroy(event_); }
  void record() override {
    CUDA_CHECK(cudaSetDevice(ctx_.ordinal), "the input copies to " + device_);
    CUDA_CHECK(cudaEventRecord(event_, ctx_.copies), "the input copies to " + device_);
  }
  void wait() override { CUDA_CHECK(cudaEventSynchronize(event_), "the input copies to " + device_); }
  void order_compute() override { CUDA_CHECK(cudaStreamWaitEvent(ctx_.stream, event_, 0), "ordering a step after its input copies on " + device_); }

 private:
  const Context& ctx_;
  std::string device_;
  cudaEvent_t event_ = nullptr;
};
}  // namespace

std::unique_ptr<Device::CopyEvent> CudaDevice::make_copy_event() { return std::make_unique<CudaCopyEvent>(context_, name()); }

void CudaDevice::setup_worker_thread() { CUDA_CHECK(cudaSetDevice(context_.ordinal), "starting the worker of " + name()); }

void CudaDevice::synchronize() {
  // A kernel's launch errors and its faults surface here, at the end of the step.
  CUDA_CHECK(cudaStreamSynchronize(context_.stream), "the step on " + name());
  CUDA_CHECK(cudaGetLastError(), "the step on " + name());
  faults_.raise_if_any();
}

namespace {
class GraphRecording : public Device::StepRecording {
 public:
  GraphRecording(cudaGraphExec_t exec, const Context& ctx, std::string device) : exec_(exec), ctx_(ctx), device_(std::move(device)) {}
  ~GraphRecording() override { cudaGraphExecDestroy(exec_); }
  void replay() override { CUDA_CHECK(cudaGraphLaunch(exec_, ctx_.stream), "replaying the recorded step on " + device_); }

 private:
  cudaGraphExec_t exec_;
  const Context& ctx_;
  std::string device_;
};

bool graphs_enabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("TANDEM_CUDA_GRAPHS");
    return !v || std::string(v) != "0";
  }();
  return enabled;
}
}  // namespace

std::unique_ptr<Device::StepRecording> CudaDevice::record(const std::function<void()>& issue) {
  if (!graphs_enabled()) return nullptr;
  CUDA_CHECK(cudaSetDevice(context_.ordinal), "recording a step on " + name());
  // Thread-local capture: the copies other threads make meanwhile (another model's inputs) are
  // not part of it and not refused.
  if (cudaStreamBeginCapture(context_.stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  bool issued = true;
  try {
    issue();
  } catch (...) {
    // A call that cannot be captured fails inside the capture; the step then runs uncaptured,
    // where a real error shows again.
    issued = false;
  }
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(context_.stream, &graph);
  cudaGraphExec_t exec = nullptr;
  const bool ok = issued && ended == cudaSuccess && graph && cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess;
  if (graph) cudaGraphDestroy(graph);
  cudaGetLastError();  // a failed capture's error is not the step's
  if (!ok) return nullptr;
  return std::make_unique<GraphRecording>(exec, context_, name());
}

unsigned long long Faults::add(std::string label, Describe describe, int64_t limit) {
  std::lock_guard lock(mutex_);
  entries_.push_back({std::move(label), describe, limit});
  return entries_.size();
}

void Faults::raise_if_any() {
  const unsigned long long code = host[0];
  if (code == 0) return;
  const auto a = static_cast<int64_t>(host[1]), b = static_cast<int64_t>(host[2]);
  host[0] = 0;
  std::lock_guard lock(mutex_);
  if (code > entries_.size()) throw Error("internal: a kernel reported fault " + std::to_string(code) + ", which no kernel registered");
  const Entry& e = entries_[code - 1];
  throw ValueError(e.describe(e.label, a, b, e.limit));
}

REGISTER_DEVICE_KIND("gpu", [](const DeviceName& name, int) { return std::make_unique<CudaDevice>(name); });

}  // namespace tandem::backend::cuda
