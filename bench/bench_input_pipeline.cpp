// Tandem side of the input-pipeline benchmark, mirroring bench/torch_input_pipeline.py.
//
// --mode pipeline (default): images/s decoded and augmented. A folder of PNG files in class
// subfolders (bench/make_image_folder.py writes one) is streamed with image_folder_source
// (grayscale, the images' own --size), each image flipped horizontally with probability 1/2 and
// cropped from the image padded with 2 zeros (datasets::random_flip("horizontal") and
// datasets::random_crop(2), what fit's `transforms` run), in shuffled batches of --batch, on
// --threads decode threads (num_parallel_calls), read with tandem::batches: the pipeline fit uses
// with no model behind it, so the time is reading, decoding, augmenting and staging alone; --warmup batches run untimed, then the rest of one pass over the files is timed.
//
// --mode train: the Fashion-MNIST CNN of bench/bench_fashion_mnist.cpp (behind a Rescaling(1/255)
// and with a (28, 28, 1) input) trained for one epoch on the same folder, streamed
// (image_folder_source + Dataset::from_source, AUTOTUNE) and from memory (the same images read
// first with image_dataset_from_directory), samples/s each and their ratio; 20 warm-up steps run
// untimed before each. The two alternate --repeats times (the machine's speed drifts between
// seconds-long epochs; alternating puts both sides under the same drift) and the median of the
// per-pair ratios is reported.
//
// Usage: bench_input_pipeline FOLDER [--mode pipeline|train] [--threads N] [--size S] [--batch B]
//                             [--warmup W] [--repeats R] [--json]
#include <tandem/data_sources.h>
#include <tandem/tandem.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>


namespace tl = tandem::layers;
namespace td = tandem::datasets;

namespace {

struct Args {
  std::string folder, mode = "pipeline";
  int threads = 1;
  int64_t size = 28, batch = 128, warmup = 5, repeats = 5;
  bool json = false;
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr, "bench_input_pipeline: %s\nusage: bench_input_pipeline FOLDER [--mode pipeline|train] [--threads N] [--size S] "
                       "[--batch B] [--warmup W] [--repeats R] [--json]\n", why.c_str());
  std::exit(2);
}

int64_t positive(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end || v < 0 || (v == 0 && flag != "--warmup")) usage(flag + " takes a positive integer, got '" + text + "'");
  return v;
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(flag + " needs a value");
      return argv[++i];
    };
    if (flag == "--mode") a.mode = value();
    else if (flag == "--threads") a.threads = static_cast<int>(positive(flag, value()));
    else if (flag == "--size") a.size = positive(flag, value());
    else if (flag == "--batch") a.batch = positive(flag, value());
    else if (flag == "--warmup") a.warmup = positive(flag, value());
    else if (flag == "--repeats") a.repeats = positive(flag, value());
    else if (flag == "--json") a.json = true;
    else if (flag.rfind("--", 0) == 0 || !a.folder.empty()) usage("unknown argument '" + flag + "'");
    else a.folder = flag;
  }
  if (a.folder.empty()) usage("give the image folder");
  if (a.mode != "pipeline" && a.mode != "train") usage("--mode is 'pipeline' or 'train', got '" + a.mode + "'");
  return a;
}

td::ImageDirectoryOptions listing(const Args& a) {
  return {.color_mode = "grayscale", .image_height = a.size, .image_width = a.size};
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// One shuffled pass over the folder through tandem::batches (the batcher and prefetcher fit stages
// its batches with, each batch copied out as tensors); images/s over the batches after the warm-up.
void pipeline(const Args& a) {
  const auto source = td::image_folder_source(a.folder, listing(a)).training;
  const tandem::Dataset data = tandem::Dataset::from_source(source, {.num_parallel_calls = a.threads, .prefetch = 2});
  tandem::BatchStream stream =
      tandem::batches(data, {.batch_size = a.batch, .shuffle = true, .transforms = {td::random_flip("horizontal"), td::random_crop(2)}});
  if (stream.size() <= a.warmup) usage(std::to_string(data.size()) + " images are too few for " + std::to_string(a.warmup) + " warm-up batches");
  int64_t images = 0;
  auto t0 = std::chrono::steady_clock::now();
  for (const tandem::Batch& b : stream) {
    if (b.index == a.warmup) t0 = std::chrono::steady_clock::now(), images = 0;
    images += b.x[0].shape()[0];
  }
  const double rate = double(images) / seconds_since(t0);
  if (a.json)
    std::printf("{\"framework\":\"tandem\",\"measured\":\"tandem::batches (fit's batcher and prefetcher), no model\",\"images\":%lld,\"batch\":%lld,"
                "\"threads\":%d,\"images_per_s\":%.1f}\n",
                static_cast<long long>(data.size()), static_cast<long long>(a.batch), a.threads, rate);
  else
    std::printf("Tandem pipeline (tandem::batches: fit's batcher and prefetcher, no model): %.0f images/s with %d decode thread(s) (%lld images, batch %lld)\n",
                rate, a.threads,
                static_cast<long long>(data.size()), static_cast<long long>(a.batch));
}

// The benchmark CNN on (size, size, 1) images of 0..255.
std::unique_ptr<tandem::Sequential> cnn(int64_t size) {
  tandem::set_random_seed(0);
  auto model = std::make_unique<tandem::Sequential>(std::vector<tandem::LayerRef>{
      tl::InputLayer({size, size, 1}), tl::Rescaling(1.0 / 255), tl::Conv2D(32, 3, {.activation = "relu"}), tl::MaxPooling2D(2),
      tl::Conv2D(64, 3, {.activation = "relu"}), tl::MaxPooling2D(2), tl::Flatten(), tl::Dense(128, "relu"), tl::Dense(10)});
  model->compile({.optimizer = tandem::optimizers::Adam(1e-3), .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true})});
  return model;
}

// Samples/s of one shuffled epoch after 20 untimed warm-up steps (which compile the step).
double epoch_rate(const tandem::Dataset& data, const Args& a) {
  auto model = cnn(a.size);
  model->fit(data, {.batch_size = a.batch, .shuffle = true, .verbose = 0, .steps_per_epoch = 20});
  const auto t0 = std::chrono::steady_clock::now();
  model->fit(data, {.batch_size = a.batch, .shuffle = true, .verbose = 0});
  return double(data.size()) / seconds_since(t0);
}

void train(const Args& a) {
  const tandem::Dataset streamed =
      tandem::Dataset::from_source(td::image_folder_source(a.folder, listing(a)).training, {.num_parallel_calls = tandem::AUTOTUNE});
  const tandem::Dataset in_memory = td::image_dataset_from_directory(a.folder, listing(a)).training;
  std::vector<double> files, memory, ratios;
  for (int64_t r = 0; r < a.repeats; ++r) {
    files.push_back(epoch_rate(streamed, a));
    memory.push_back(epoch_rate(in_memory, a));
    ratios.push_back(files.back() / memory.back());
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  };
  auto list = [](const std::vector<double>& v, const char* format) {
    std::string s;
    for (const double x : v) {
      char one[32];
      std::snprintf(one, sizeof one, format, x);
      s += (s.empty() ? "" : ", ") + std::string(one);
    }
    return s;
  };
  if (a.json)
    std::printf("{\"framework\":\"tandem\",\"model\":\"cnn\",\"images\":%lld,\"batch\":%lld,\"threads\":%u,\"repeats\":%lld,"
                "\"files_samples_per_s\":%.1f,\"memory_samples_per_s\":%.1f,\"ratio\":%.3f,\"ratios\":[%s]}\n",
                static_cast<long long>(streamed.size()), static_cast<long long>(a.batch), std::thread::hardware_concurrency(),
                static_cast<long long>(a.repeats), median(files), median(memory), median(ratios), list(ratios, "%.3f").c_str());
  else
    std::printf("Tandem CNN, one epoch of %lld images, batch %lld, %lld alternating pairs: median %.0f samples/s from files (AUTOTUNE), "
                "%.0f from memory, median ratio %.2f (each pair: %s)\n",
                static_cast<long long>(streamed.size()), static_cast<long long>(a.batch), static_cast<long long>(a.repeats), median(files),
                median(memory), median(ratios), list(ratios, "%.2f").c_str());
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  try {
    if (a.mode == "pipeline") pipeline(a);
    else train(a);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_input_pipeline: %s\n", e.what());
    return 1;
  }
  return 0;
}
