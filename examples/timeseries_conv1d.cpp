// Forecasts the next value of a noisy time series from the window before it with a small Conv1D
// network, on synthetic data made here: each sample is a window of a sum of three sines of random
// frequency, amplitude and phase, plus Gaussian noise. The validation MSE is printed beside the
// naive forecast's (tomorrow = today) and the noise floor no forecast can beat.
#include <tandem/tandem.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <numbers>
#include <random>
#include <vector>

namespace tl = tandem::layers;

namespace {

constexpr int64_t kWindow = 48;  // steps the model sees
constexpr int64_t kTrain = 60000, kVal = 4000;
constexpr double kNoise = 0.1;  // the noise's standard deviation: its variance is the floor of any MSE
constexpr int kEpochs = 10;

struct Series {
  std::vector<float> x;  // (n, kWindow, 1)
  std::vector<float> y;  // (n, 1): the value after each window
};

Series make_series(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> freq(0.01, 0.15), amp(0.2, 1.0), phase(0.0, 2 * std::numbers::pi);
  std::normal_distribution<double> noise(0.0, kNoise);
  Series s;
  for (int64_t i = 0; i < n; ++i) {
    double f[3], a[3], p[3];
    for (int k = 0; k < 3; ++k) f[k] = freq(rng), a[k] = amp(rng), p[k] = phase(rng);
    for (int64_t t = 0; t <= kWindow; ++t) {
      double v = noise(rng);
      for (int k = 0; k < 3; ++k) v += a[k] * std::sin(2 * std::numbers::pi * f[k] * double(t) + p[k]);
      (t < kWindow ? s.x : s.y).push_back(static_cast<float>(v));
    }
  }
  return s;
}

tandem::Dataset dataset(const Series& s) {
  const auto n = static_cast<int64_t>(s.y.size());
  return tandem::Dataset::from_arrays(s.x, {n, kWindow, 1}, s.y, {n, 1});
}

// The naive forecast: the next value is the window's last one.
double naive_mse(const Series& s) {
  double sum = 0;
  for (std::size_t i = 0; i < s.y.size(); ++i) {
    const double d = double(s.y[i]) - double(s.x[(i + 1) * kWindow - 1]);
    sum += d * d;
  }
  return sum / double(s.y.size());
}

}  // namespace

int main() {
  const auto start = std::chrono::steady_clock::now();
  tandem::set_random_seed(42);
  const Series train = make_series(kTrain, 1), val = make_series(kVal, 2);

  const tandem::Symbol window = tandem::Input({kWindow, 1}, tandem::DType::F32, "window");
  tandem::Symbol h = tl::Conv1D(32, 5, {.activation = "relu"})(window);
  h = tl::Conv1D(32, 5, {.activation = "relu"})(h);
  // Flatten keeps where each feature is, which matters for the next value. (Measured while choosing
  // this model: a strided second convolution doubles the validation MSE, and dropping the hidden
  // Dense layer as well makes it nearly four times this one's.)
  h = tl::Dense(64, "relu")(tl::Flatten()(h));
  const tandem::Symbol next = tl::Dense(1)(h);
  tandem::Model model(window, next, "conv1d_forecaster");
  model.compile({.optimizer = tandem::optimizers::Adam(1e-3), .loss = tandem::losses::MeanSquaredError()});
  model.summary();

  const tandem::History history = model.fit(dataset(train), {.epochs = kEpochs, .batch_size = 64, .validation_data = dataset(val), .verbose = 2});

  const double naive = naive_mse(val), floor = kNoise * kNoise;
  std::printf("\nepoch  loss    val_mse\n");
  for (std::size_t e = 0; e < history.epoch.size(); ++e)
    std::printf("%5d  %.4f  %.4f\n", history.epoch[e] + 1, history.history.at("loss")[e], history.history.at("val_loss")[e]);
  const double model_mse = history.history.at("val_loss").back();
  std::printf("validation MSE: Conv1D %.4f, naive forecast (last value) %.4f, noise floor %.4f\n", model_mse, naive, floor);
  std::printf("the Conv1D model's error is %.1f%% of the naive forecast's\n", 100 * model_mse / naive);

  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("total time: %.1f s\n", seconds);
  return 0;
}
