// Continues training a saved model in a process of its own, for tests/test_model_save.cpp. There is
// no model-building code here: the architecture, compile settings, weights, optimizer state and
// random state all come from the model file.
//
//   load_model_child MODEL.h5 DATA.h5 EPOCHS BATCH_SIZE OUT.weights.h5 [OUT_MODEL.h5]
//
// DATA.h5 holds the datasets "x" and "y". The model trains EPOCHS more epochs (shuffled), starting at
// the epoch recorded in MODEL.h5, and its final weights and optimizer state go to OUT.weights.h5
// (and the whole model to OUT_MODEL.h5 when given). Exit status 0 on success, 1 with a message on
// standard error otherwise.
#include <iostream>
#include <string>
#include <tandem/tandem.h>

#include "io/hdf5_file.h"

int main(int argc, char** argv) {
  if (argc != 6 && argc != 7) {
    std::cerr << "usage: " << argv[0] << " MODEL.h5 DATA.h5 EPOCHS BATCH_SIZE OUT.weights.h5 [OUT_MODEL.h5]\n";
    return 2;
  }
  try {
    const std::unique_ptr<tandem::Model> model = tandem::load_model(argv[1]);
    const tandem::TrainingState state = tandem::load_training_state(argv[1]);
    const tandem::io::H5File data = tandem::io::H5File::open(argv[2]);
    const tandem::Tensor x = data.read_dataset("x"), y = data.read_dataset("y");
    const int epochs = std::stoi(argv[3]);
    model->fit(x, y, {.epochs = state.epoch + epochs, .batch_size = std::stoll(argv[4]), .shuffle = true, .verbose = 0,
                      .initial_epoch = state.epoch});
    model->save_weights(argv[5]);
    if (argc == 7) model->save(argv[6]);
  } catch (const std::exception& e) {
    std::cerr << "load_model_child: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
