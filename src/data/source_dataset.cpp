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
}  // namespace

Dataset Dataset::from_source(std::shared_ptr<const Source> source, InputPipelineOptions options) {
  if (!source) throw ValueError("Dataset::from_source: the source is null");
  check_options(options, "Dataset::from_source");
  const SampleType type = source->sample_type();
  const std::string who = "Dataset::from_source(" + source->describe() + ")";
  if (source->size() < 0) throw ValueError(who + ": the source has a negative size, " + std::to_string(source->size()));
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

}  // namespace datasets
}  // namespace tandem
