// Trains a small regression model on y = x0 + x1 + x2 + x3 and checks that the mean squared error
// falls below a bound a linear fit reaches easily. Exits 1 when it does not.
#include <tandem/tandem.h>

#include <cstdio>
#include <random>
#include <vector>

namespace tl = tandem::layers;

int main() {
  constexpr int64_t rows = 512, features = 4;
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> x(rows * features), y(rows);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < features; ++c) y[r] += x[r * features + c] = uniform(gen);
  }

  tandem::set_random_seed(42);
  tandem::Sequential model({tl::InputLayer({features}), tl::Dense(16, "relu"), tl::Dense(1)});
  model.compile({.optimizer = tandem::optimizers::Adam(0.01), .loss = "mse"});
  const tandem::History history =
      model.fit(tandem::Tensor::from({rows, features}, x), tandem::Tensor::from({rows, 1}, y),
                {.epochs = 20, .batch_size = 32, .verbose = 0});

  const std::vector<double>& loss = history.history.at("loss");
  // The targets' variance is 4/3 (four uniforms on [-1, 1]); predicting their mean scores that.
  constexpr double bound = 0.05;
  std::printf("loss: first epoch %.5f, last epoch %.5f (bound %.2f)\n", loss.front(), loss.back(), bound);
  if (!(loss.back() < bound && loss.back() < loss.front())) {
    std::fprintf(stderr, "FAIL: the loss did not fall below %.2f\n", bound);
    return 1;
  }
  return 0;
}
