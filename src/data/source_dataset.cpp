// Streamed datasets: Dataset::from_source, a user's own source (datasets::from_function), and the
// pipeline options either kind of Dataset carries.
#include <string>
#include <thread>
#include <utility>

#include "tandem/data.h"
#include "tandem/errors.h"

namespace tandem {

namespace {
void check_options(const InputPipelineOptions& o, const char* who) {
  if (o.num_parallel_calls != AUTOTUNE && o.num_parallel_calls < 1)
    throw ValueError(std::string(who) + ": num_parallel_calls must be >= 1 or AUTOTUNE, got " + std::to_string(o.num_parallel_calls));
  if (o.prefetch < 1) throw ValueError(std::string(who) + ": prefetch must be >= 1 (batches staged ahead), got " + std::to_string(o.prefetch));
}

// A batch that fails cannot be replaced by the next readable samples, as skip_errors does.
void check_skip_errors(const Source& source, const InputPipelineOptions& o, const std::string& who) {
  if (source.batch_size() > 0 && o.skip_errors)
    throw ValueError(who + ": skip_errors needs a source read sample by sample; " + source.describe() + " makes whole batches of " +
                     std::to_string(source.batch_size()));
}

// A callable as a Source: what datasets::from_function wraps.
class FunctionSource final : public Source {
 public:
  FunctionSource(int64_t size, SampleType type, datasets::SampleReader read, std::string name)
      : size_(size), type_(std::move(type)), read_(std::move(read)), name_(std::move(name)) {}
  int64_t size() const override { return size_; }
  SampleType sample_type() const override { return type_; }
  void read(int64_t index, std::span<std::byte* const> out) const override { read_(index, out); }
  std::string describe() const override { return name_; }

 private:
  int64_t size_;
  SampleType type_;
  datasets::SampleReader read_;
  std::string name_;
};
// A batch callable as a Source of whole batches: what datasets::from_batch_function wraps.
class BatchFunctionSource final : public Source {
 public:
  BatchFunctionSource(int64_t size, int64_t batch_size, SampleType type, datasets::BatchReader read, std::string name)
      : size_(size), batch_size_(batch_size), type_(std::move(type)), read_(std::move(read)), name_(std::move(name)) {}
  int64_t size() const override { return size_; }
  SampleType sample_type() const override { return type_; }
  void read(int64_t, std::span<std::byte* const>) const override {
    throw Error("internal: " + name_ + " makes whole batches; a sample was asked of it");
  }
  int64_t batch_size() const override { return batch_size_; }
  void read_batch(int64_t batch, int64_t rows, std::span<std::byte* const> out) const override { read_(batch, rows, out); }
  std::string describe() const override { return name_; }

 private:
  int64_t size_, batch_size_;
  SampleType type_;
  datasets::BatchReader read_;
  std::string name_;
};
}  // namespace

void Source::read_batch(int64_t, int64_t, std::span<std::byte* const>) const {
  throw Error("internal: " + describe() + " reads samples one by one (batch_size() is 0); a whole batch was asked of it");
}

Dataset Dataset::from_source(std::shared_ptr<const Source> source, InputPipelineOptions options) {
  if (!source) throw ValueError("Dataset::from_source: the source is null");
  check_options(options, "Dataset::from_source");
  const SampleType type = source->sample_type();
  const std::string who = "Dataset::from_source(" + source->describe() + ")";
  if (source->size() < 0) throw ValueError(who + ": the source has a negative size, " + std::to_string(source->size()));
  if (source->batch_size() < 0)
    throw ValueError(who + ": batch_size() must be >= 1 for a source of whole batches or 0 for one of samples, got " +
                     std::to_string(source->batch_size()));
  check_skip_errors(*source, options, who);
  if (type.x.empty() || type.y.empty())
    throw ValueError(who + ": a sample needs at least one x and one y column, got " + std::to_string(type.x.size()) + " and " +
                     std::to_string(type.y.size()));
  for (std::size_t c = 0; c < type.columns(); ++c)
    for (const int64_t d : type.column(c).shape.dims())
      if (d < 0) throw ShapeError(who + ": column " + std::to_string(c) + " has shape " + type.column(c).shape.str() + "; every dimension must be known");
  Dataset out;
  out.source_ = std::move(source);
  out.pipeline_ = options;
  out.x_maps_.resize(type.x.size());
  out.y_maps_.resize(type.y.size());
  return out;
}

Dataset Dataset::with_pipeline(InputPipelineOptions options) const {
  check_options(options, "Dataset::with_pipeline");
  if (source_) check_skip_errors(*source_, options, "Dataset::with_pipeline");
  Dataset out = *this;
  out.pipeline_ = options;
  return out;
}

const std::vector<Tensor>& Dataset::no_tensors(const char* what) const {
  throw ValueError(std::string("Dataset::") + what + ": this dataset is streamed from " + source_->describe() +
                   " and holds no tensors in memory; fit, evaluate and predict read it as they go");
}

namespace datasets {

Dataset from_function(int64_t size, SampleType type, SampleReader read, InputPipelineOptions options, std::string name) {
  if (!read) throw ValueError("datasets::from_function: the read function is empty");
  return Dataset::from_source(std::make_shared<FunctionSource>(size, std::move(type), std::move(read), std::move(name)), options);
}

Dataset from_batch_function(int64_t size, int64_t batch_size, SampleType type, BatchReader read, InputPipelineOptions options,
                            std::string name) {
  if (!read) throw ValueError("datasets::from_batch_function: the read function is empty");
  if (batch_size < 1) throw ValueError("datasets::from_batch_function: batch_size must be >= 1, got " + std::to_string(batch_size));
  return Dataset::from_source(std::make_shared<BatchFunctionSource>(size, batch_size, std::move(type), std::move(read), std::move(name)),
                              options);
}

}  // namespace datasets
}  // namespace tandem
