#include "data/prefetcher.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <thread>

#include "tandem/errors.h"
#include "tandem/watchdog.h"

namespace tandem::data {

namespace {
constexpr auto kWaitSpin = std::chrono::microseconds(20);
// AUTOTUNE decides every this many batches: one more decode thread while the step waited for
// input more than kTuneWait of the window's time, up to the hardware threads.
constexpr int64_t kTuneWindow = 8;
constexpr double kTuneWait = 0.02;

std::atomic<std::size_t> live_staging{0}, peak_staging{0};

// Staging memory without a device's own: 64-byte aligned, zeroed.
std::shared_ptr<std::byte> ordinary_memory(std::size_t bytes) {
  const std::size_t rounded = (bytes + 63) / 64 * 64;
  auto* p = static_cast<std::byte*>(std::aligned_alloc(64, rounded));
  if (!p) throw std::bad_alloc();
  std::memset(p, 0, rounded);
  return std::shared_ptr<std::byte>(p, [](std::byte* q) { std::free(q); });
}

double seconds(core::Clock::time_point t) { return std::chrono::duration<double>(t.time_since_epoch()).count(); }

void hold(std::size_t bytes) {
  const std::size_t now = live_staging.fetch_add(bytes) + bytes;
  std::size_t peak = peak_staging.load();
  while (now > peak && !peak_staging.compare_exchange_weak(peak, now)) {
  }
}
}  // namespace

std::size_t Prefetcher::peak_staging_bytes() { return peak_staging.load(); }
void Prefetcher::reset_peak_staging_bytes() { peak_staging.store(live_staging.load()); }

Prefetcher::Prefetcher(const Batcher& batches, const std::vector<bool>& wanted, const StagingAllocator& allocate) : batches_(batches) {
  const InputPipelineOptions& o = batches.pipeline();
  autotuning_ = o.num_parallel_calls == AUTOTUNE;
  max_threads_ = autotuning_ ? std::max(1, static_cast<int>(std::thread::hardware_concurrency())) : std::max(1, o.num_parallel_calls);
  active_ = autotuning_ ? 1 : max_threads_;
  const auto rows = static_cast<std::size_t>(batches.num_batches() ? batches.batch_rows(0) : 0);
  const int slots = std::max(1, o.prefetch) + 1;
  for (int i = 0; i < slots; ++i) {
    auto s = std::make_unique<Slot>();
    s->columns.resize(batches.columns());
    for (std::size_t c = 0; c < batches.columns(); ++c) {
      const bool want = c < wanted.size() && wanted[c];
      const std::size_t bytes = want ? rows * batches.row_bytes(c) : 0;  // once, for the largest batch
      if (bytes) s->columns[c] = allocate ? allocate(bytes) : ordinary_memory(bytes);
      staging_bytes_ += bytes;
      s->outs.push_back(s->columns[c].get());  // null for zero-byte rows too: nothing to copy
    }
    s->tickets.resize(static_cast<std::size_t>(max_threads_));
    for (int k = 0; k < max_threads_; ++k) s->part.emplace_back([this, slot = s.get(), k] { gather_part(*slot, k); });
    slots_.push_back(std::move(s));
  }
  hold(staging_bytes_);
  threads_.reserve(static_cast<std::size_t>(max_threads_));
  scratch_.reserve(static_cast<std::size_t>(max_threads_));  // never moved while a thread reads its own
  while (static_cast<int>(threads_.size()) < active_) add_thread();
}

Prefetcher::~Prefetcher() {
  for (auto& t : threads_) t.reset();  // each finishes what it was given, then joins
  live_staging.fetch_sub(staging_bytes_);
}

void Prefetcher::add_thread() {
  scratch_.emplace_back(batches_.scratch_bytes());
  staging_bytes_ += batches_.scratch_bytes();
  hold(batches_.scratch_bytes());
  threads_.push_back(std::make_unique<core::TaskThread>(static_cast<int>(slots_.size()), core::Clock::duration::zero()));
}

void Prefetcher::gather_part(Slot& s, int thread) {
  std::string error;
  int64_t skipped = 0;
  const int k = thread - s.first_thread;
  for (const auto& [begin, end] : s.ranges) {  // this thread's share of each range
    const int64_t n = end - begin, lo = begin + n * k / s.parts, hi = begin + n * (k + 1) / s.parts;
    if (lo < hi) skipped += batches_.gather(s.batch, s.outs, lo, hi, scratch_[static_cast<std::size_t>(thread)].data(), error.empty() ? &error : nullptr);
  }
  if (!skipped) return;
  s.skipped.fetch_add(skipped);
  const std::lock_guard lock(s.error_mutex);
  if (k < s.error_part) s.first_error = error, s.error_part = k;  // the first rows' error, whichever thread ends first
}

void Prefetcher::gather_into(Slot& s, int64_t b) {
  const int64_t rows = batches_.batch_rows(b);
  s.batch = b;
  const bool whole = batches_.whole_batches();  // and every row is staged, whatever the rows read
  s.ranges = select_ && !whole ? select_(rows) : RowRanges{{0, rows}};
  s.parts = whole ? 1 : active_;
  s.first_thread = whole ? static_cast<int>(b % active_) : 0;
  s.skipped.store(0);
  s.first_error.clear();
  s.error_part = s.parts;
  for (int t = s.first_thread; t < s.first_thread + s.parts; ++t)
    s.tickets[static_cast<std::size_t>(t)] = threads_[static_cast<std::size_t>(t)]->post(s.part[static_cast<std::size_t>(t)]);
}

void Prefetcher::drain() {
  // An abandoned epoch may have left gathers running: they finish before their slots are reused.
  const auto deadline = core::Clock::now() + watchdog_timeout();
  for (auto& t : threads_) {
    if (t->posted() == 0) continue;
    try {
      if (!t->wait(t->posted() - 1, deadline))
        throw TimeoutError("watchdog: the decode threads did not finish the previous epoch's batches of " + batches_.describe() + " within " +
                           std::to_string(watchdog_timeout().count()) + " ms");
    } catch (const TimeoutError&) {
      throw;
    } catch (...) {  // the failed gather of an abandoned epoch was reported then
    }
  }
  for (auto& s : slots_) s->batch = -1;
}

void Prefetcher::start_epoch(int64_t first) {
  drain();
  for (auto& s : slots_) s->batch = -1;
  const auto n = static_cast<int64_t>(slots_.size());
  for (int64_t b = first; b < first + n && b < batches_.num_batches(); ++b) gather_into(*slots_[static_cast<std::size_t>(b % n)], b);
  window_batches_ = 0, window_waited_ = 0, window_start_ = seconds(core::Clock::now());
}

Prefetcher::Slot& Prefetcher::ready(int64_t b) {
  Slot& s = *slots_[static_cast<std::size_t>(b % static_cast<int64_t>(slots_.size()))];
  if (s.batch != b) throw Error("internal: batch " + std::to_string(b) + " was never asked of the prefetcher");
  const auto start = core::Clock::now();
  const auto deadline = start + watchdog_timeout();
  bool waited = false;
  for (int k = s.first_thread; k < s.first_thread + s.parts; ++k) {
    core::TaskThread& t = *threads_[static_cast<std::size_t>(k)];
    const uint64_t ticket = s.tickets[static_cast<std::size_t>(k)];
    waited = waited || !t.finished(ticket);
    if (!t.wait(ticket, deadline, kWaitSpin))
      throw TimeoutError("watchdog: the decode threads did not stage batch " + std::to_string(b) + " of " + batches_.describe() + " within " +
                         std::to_string(watchdog_timeout().count()) + " ms");
  }
  if (waited) {
    const double w = std::chrono::duration<double>(core::Clock::now() - start).count();
    waited_ += w, window_waited_ += w;
  }
  return s;
}

const std::byte* Prefetcher::column(int64_t b, std::size_t c) { return ready(b).columns.at(c).get(); }

int64_t Prefetcher::take_skipped(std::string* first_error) {
  if (first_error) *first_error = first_error_;
  first_error_.clear();
  return std::exchange(skipped_, 0);
}

void Prefetcher::release(int64_t b) {
  Slot& s = *slots_[static_cast<std::size_t>(b % static_cast<int64_t>(slots_.size()))];
  if (const int64_t n = s.skipped.load()) {
    if (!skipped_) first_error_ = s.first_error;
    skipped_ += n;
  }
  s.batch = -1;
  if (autotuning_ && ++window_batches_ >= kTuneWindow) {
    const double now = seconds(core::Clock::now());
    if (window_waited_ > kTuneWait * (now - window_start_) && active_ < max_threads_) {
      ++active_;
      if (static_cast<int>(threads_.size()) < active_) add_thread();
    }
    window_batches_ = 0, window_waited_ = 0, window_start_ = now;
  }
  const auto n = static_cast<int64_t>(slots_.size());
  if (b + n < batches_.num_batches()) gather_into(s, b + n);
}

}  // namespace tandem::data
