// gather (table rows by id) and scatter_add (its adjoint) on CUDA devices.
//
// Ids come from data. As on the CPU, an id outside the whole table is an error of the step: a
// check kernel reports the first bad id it meets through the device's fault word, and the step
// raises ValueError naming the layer, the id and its position when it ends (Faults in
// context.h). A table split by rows (ModelSplit) holds rows [first, first + block): other valid ids
// give a row of zeros in gather and add nothing in scatter_add.
//
// scatter_add is deterministic without atomics: a block owns a band of output rows and a tile of
// columns, walks the ids in order keeping those that fall in its band (an order-preserving
// compaction), and each thread adds its column of every kept update in id order: the CPU kernel's
// additions in the CPU kernel's order, so the sums are bitwise the same.
#include "backend/cuda/kernel_util.cuh"

namespace tandem::backend::cuda {

namespace {
struct Ids {
  const void* data;
  bool wide;  // int64 (else int32)
  int64_t count;
  __device__ int64_t at(int64_t i) const {
    return wide ? static_cast<const int64_t*>(data)[i] : static_cast<const int32_t*>(data)[i];
  }
};

Ids ids_of(const KernelInit& k) {
  const TensorType& t = k.in_types[1];
  return {k.in[1], t.dtype == DType::I64, numel(t)};
}

__global__ void check_ids_kernel(Ids ids, int64_t rows, unsigned long long* fault, unsigned long long code) {
  TANDEM_CUDA_LOOP(i, ids.count) {
    const int64_t id = ids.at(i);
    if (id < 0 || id >= rows) report_fault(fault, code, id, i);
  }
}

std::string describe_bad_id(const std::string& owner, int64_t id, int64_t position, int64_t rows) {
  return owner + ": index " + std::to_string(id) + " at position " + std::to_string(position) + " is out of range [0, " + std::to_string(rows) + ")";
}

// The kernel that checks the ids against a table of `rows`, as the CPU kernel does first.
KernelFn id_check(const KernelInit& k, const char* op, const Ids& ids, int64_t rows) {
  if (ids.count == 0) return [] {};
  const std::string owner = k.node.attrs.s("owner");
  Faults* faults = context(k).faults;
  const unsigned long long code = faults->add(owner.empty() ? op : owner, describe_bad_id, rows);
  unsigned long long* word = faults->device;
  const unsigned grid = blocks_for(ids.count, context(k));
  cudaStream_t s = stream(k);
  const std::string label = kernel_label(k);
  return [=] {
    check_ids_kernel<<<grid, kBlock, 0, s>>>(ids, rows, word, code);
    check_launch(label);
  };
}

// A block of a table split by rows holds rows [first, first + block); other ids give zeros.
template <class T>
__global__ void gather_kernel(T* __restrict__ y, const T* __restrict__ table, Ids ids, int64_t d, int64_t first, int64_t block) {
  const int64_t n = ids.count * d;
  TANDEM_CUDA_LOOP(i, n) {
    const int64_t position = i / d;
    const int64_t row = ids.at(position) - first;
    y[i] = row >= 0 && row < block ? table[row * d + (i - position * d)] : T(0);
  }
}

template <class T>
KernelFn make_gather(const KernelInit& k) {
  const T* table = in<T>(k, 0);
  const int64_t block = k.in_types[0].shape[0], d = k.in_types[0].shape[1];
  const int64_t first = k.node.attrs.i("first", 0), rows = k.node.attrs.i("vocab", block);
  const Ids ids = ids_of(k);
  T* y = out<T>(k);
  const int64_t n = ids.count * d;
  const KernelFn check = id_check(k, "gather", ids, rows);
  if (n == 0) return check;
  const unsigned grid = blocks_for(n, context(k));
  cudaStream_t s = stream(k);
  const std::string label = kernel_label(k);
  return [=] {
    check();
    gather_kernel<<<grid, kBlock, 0, s>>>(y, table, ids, d, first, block);
    check_launch(label);
  };
}

constexpr int kWarp = 32;
constexpr int kScatterPrefetch = 8;  // update loads in flight per thread: a hot row is a long chain

// Block (x, y) owns output rows [y·band, (y+1)·band) and columns [x·blockDim.x, (x+1)·blockDim.x).
// blockDim.x is a multiple of 32, at most kBlock.
template <class T>
__global__ void scatter_add_kernel(T* __restrict__ y, const T* __restrict__ updates, Ids ids, int64_t rows, int64_t d, int64_t band) {
  __shared__ int64_t kept_position[kBlock], kept_row[kBlock];
  __shared__ int warp_kept[kBlock / kWarp];
  const int64_t row_begin = int64_t(blockIdx.y) * band, row_end = row_begin + band < rows ? row_begin + band : rows;
  const int64_t column = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const bool has_column = column < d;
  if (has_column)
    for (int64_t r = row_begin; r < row_end; ++r) y[r * d + column] = T(0);
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp, warps = blockDim.x / kWarp;
  // The row this thread is summing into, held in a register while consecutive kept ids repeat it.
  int64_t current = -1;
  T sum = T(0);
  for (int64_t pass = 0; pass < ids.count; pass += blockDim.x) {
    const int64_t position = pass + threadIdx.x;
    const int64_t id = position < ids.count ? ids.at(position) : -1;
    const bool keep = id >= row_begin && id < row_end;
    const unsigned ballot = __ballot_sync(0xffffffffu, keep);
    if (lane == 0) warp_kept[warp] = __popc(ballot);
    __syncthreads();
    int slot = __popc(ballot & ((1u << lane) - 1)), kept = 0;
    for (int w = 0; w < warps; ++w) {
      if (w < warp) slot += warp_kept[w];
      kept += warp_kept[w];
    }
    if (keep) kept_position[slot] = position, kept_row[slot] = id;
    __syncthreads();
    if (has_column)
      for (int s0 = 0; s0 < kept; s0 += kScatterPrefetch) {
        T value[kScatterPrefetch];
#pragma unroll
        for (int j = 0; j < kScatterPrefetch; ++j)
          value[j] = s0 + j < kept ? updates[kept_position[s0 + j] * d + column] : T(0);
#pragma unroll
        for (int j = 0; j < kScatterPrefetch; ++j) {
          if (s0 + j >= kept) break;
          const int64_t r = kept_row[s0 + j];
          if (r != current) {
            if (current >= 0) y[current * d + column] = sum;
            current = r;
            sum = y[r * d + column];
          }
          sum += value[j];
        }
      }
    __syncthreads();  // before the next pass overwrites the kept lists
  }
  if (has_column && current >= 0) y[current * d + column] = sum;
}

template <class T>
KernelFn make_scatter_add(const KernelInit& k) {
  const T* updates = in<T>(k, 0);
  const Ids ids = ids_of(k);
  const int64_t rows = k.out_type().shape[0], d = k.out_type().shape[1];
  T* y = out<T>(k);
  const KernelFn check = id_check(k, "scatter_add", ids, rows);
  if (rows * d == 0) return check;
  // Narrow blocks for narrow rows; then enough bands of rows to give every SM a few blocks.
  const int64_t width = (d + kWarp - 1) / kWarp * kWarp;
  const unsigned threads = static_cast<unsigned>(width < kBlock ? width : kBlock);
  const int64_t column_tiles = (d + threads - 1) / threads;
  const int64_t wanted = int64_t(context(k).sm_count > 0 ? context(k).sm_count : 1) * 4;
  int64_t bands = (wanted + column_tiles - 1) / column_tiles;
  if (bands > rows) bands = rows;
  const int64_t band = (rows + bands - 1) / bands;
  bands = (rows + band - 1) / band;
  const dim3 grid(static_cast<unsigned>(column_tiles), static_cast<unsigned>(bands));
  cudaStream_t s = stream(k);
  const std::string label = kernel_label(k);
  return [=] {
    check();
    scatter_add_kernel<<<grid, threads, 0, s>>>(y, updates, ids, rows, d, band);
    check_launch(label);
  };
}
}  // namespace

REGISTER_CUDA_FLOAT_KERNEL("gather", make_gather);
REGISTER_CUDA_FLOAT_KERNEL("scatter_add", make_scatter_add);

}  // namespace tandem::backend::cuda
