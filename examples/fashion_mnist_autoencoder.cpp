// A denoising convolutional autoencoder on Fashion-MNIST: the model sees an image with Gaussian
// noise added and learns to give back the clean image. The preprocessing is part of the model
// (Reshape to one channel, Rescaling to [-1, 1]), so the saved file takes images as they come;
// the decoder grows the picture back with Conv2DTranspose and UpSampling2D. At the end the test
// MSE is printed beside two baselines: the noisy input itself and the mean training image.
#include <tandem/tandem.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <vector>

namespace tl = tandem::layers;

namespace {

constexpr int64_t kTrainImages = 20000;  // of 60000: enough to learn, quick on two cores
constexpr int kEpochs = 4;
constexpr double kNoise = 0.3;  // the noise's standard deviation, on pixels in [0, 1]

// The images of `data` (first `n`), and the same with noise, clipped to [0, 1].
struct Pairs {
  tandem::Tensor noisy, clean;
};

Pairs with_noise(const tandem::Tensor& images, int64_t n, uint32_t seed) {
  const auto clean = images.values<float>().subspan(0, static_cast<std::size_t>(n * 28 * 28));
  std::mt19937 rng(seed);
  std::normal_distribution<float> noise(0.0f, static_cast<float>(kNoise));
  std::vector<float> noisy(clean.begin(), clean.end());
  for (float& v : noisy) v = std::clamp(v + noise(rng), 0.0f, 1.0f);
  return {tandem::Tensor::from({n, 28, 28}, std::span<const float>(noisy)), tandem::Tensor::from({n, 28, 28}, clean)};
}

double mse(std::span<const float> a, std::span<const float> b) {
  double sum = 0;
  for (std::size_t i = 0; i < a.size(); ++i) sum += (double(a[i]) - double(b[i])) * (double(a[i]) - double(b[i]));
  return sum / double(a.size());
}

// The MSE of predicting the mean training image for every test image.
double mean_image_mse(const tandem::Tensor& train, const tandem::Tensor& test) {
  std::vector<double> mean(28 * 28, 0.0);
  const auto t = train.values<float>();
  const auto rows = static_cast<std::size_t>(train.shape()[0]);
  for (std::size_t i = 0; i < t.size(); ++i) mean[i % mean.size()] += double(t[i]) / double(rows);
  std::vector<float> guess(static_cast<std::size_t>(test.size()));
  for (std::size_t i = 0; i < guess.size(); ++i) guess[i] = static_cast<float>(mean[i % mean.size()]);
  return mse(guess, test.values<float>());
}

}  // namespace

int main() {
  const auto start = std::chrono::steady_clock::now();
  tandem::set_random_seed(7);
  auto [train_data, test_data] = tandem::datasets::fashion_mnist();
  const Pairs train = with_noise(train_data.x(), kTrainImages, 1);
  const Pairs test = with_noise(test_data.x(), test_data.size(), 2);

  const tandem::Symbol image = tandem::Input({28, 28}, tandem::DType::F32, "noisy_image");
  tandem::Symbol h = tl::Rescaling(2.0, -1.0)(tl::Reshape({28, 28, 1})(image));                 // [0, 1] -> [-1, 1]
  h = tl::Conv2D(32, 3, {.strides = 2, .padding = "same", .activation = "relu"})(h);           // 14 x 14
  h = tl::Conv2D(32, 3, {.strides = 2, .padding = "same", .activation = "relu"})(h);           // 7 x 7
  h = tl::Conv2DTranspose(32, 3, {.strides = 2, .padding = "same", .activation = "relu"})(h);  // 14 x 14
  h = tl::UpSampling2D(2, {.interpolation = "bilinear"})(h);                                   // 28 x 28
  h = tl::Conv2D(1, 3, {.padding = "same", .activation = "sigmoid"})(h);
  const tandem::Symbol clean = tl::Reshape({28, 28})(h);
  tandem::Model model(image, clean, "denoiser");
  model.compile({.optimizer = tandem::optimizers::Adam(2e-3), .loss = tandem::losses::MeanSquaredError()});
  model.summary();

  model.fit(train.noisy, train.clean, {.epochs = kEpochs, .batch_size = 64, .validation_data = tandem::Dataset(test.noisy, test.clean), .verbose = 2});
  const tandem::Tensor denoised = model.predict(test.noisy, {.batch_size = 256});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("test MSE: denoised %.4f, noisy input %.4f, mean image %.4f (%.0f s)\n", mse(denoised.values<float>(), test.clean.values<float>()),
              mse(test.noisy.values<float>(), test.clean.values<float>()), mean_image_mse(train.clean, test.clean), seconds);
  model.save("denoiser.keras");  // Rescaling and the decoder's layers save with it; Keras 3 loads it
}
