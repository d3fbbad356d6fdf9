// Compiled, never run: each public struct that users fill with designated initialisers, filled
// with one field as a user would. Under -Wall -Wextra -Werror this fails to build if a field lacks
// a default member initialiser (GCC's -Wmissing-field-initializers names every field left out that
// has none, even in a designated initialiser). A new public options struct belongs here.
#include <tandem/tandem.h>

namespace td = tandem::distribute;
namespace tl = tandem::layers;

void options_check() {
  [[maybe_unused]] tandem::CompileOptions compile{.optimizer = "adam"};
  [[maybe_unused]] tandem::FitOptions fit{.epochs = 2};
  [[maybe_unused]] tandem::FitProgress progress{.epoch = 1};
  [[maybe_unused]] tandem::EvaluateOptions evaluate{.batch_size = 8};
  [[maybe_unused]] tandem::PredictOptions predict{.batch_size = 8};
  [[maybe_unused]] tandem::TensorType type{.dtype = tandem::DType::F64};
  [[maybe_unused]] tandem::datasets::CsvOptions csv_file{.header = false};
  [[maybe_unused]] tandem::TrainingState state{.epoch = 1};
  [[maybe_unused]] tandem::TrainParams params{.epochs = 2};
  [[maybe_unused]] tandem::callbacks::ModelCheckpointOptions checkpoint{.monitor = "loss"};
  [[maybe_unused]] tandem::callbacks::BackupAndRestoreOptions backup{.delete_checkpoint = false};
  [[maybe_unused]] tandem::callbacks::EarlyStoppingOptions early{.patience = 2};
  [[maybe_unused]] tandem::callbacks::ReduceLROnPlateauOptions plateau{.factor = 0.5};
  [[maybe_unused]] tandem::callbacks::CSVLoggerOptions csv{.append = true};
  [[maybe_unused]] td::DefaultOptions default_options{.micro_batches = 2};
  [[maybe_unused]] td::MirroredOptions mirrored{.sync_every = 2};
  [[maybe_unused]] td::PipelineOptions pipeline{.stages = 2};
  [[maybe_unused]] td::ModelSplitOptions split{.timeout_ms = 1000};
  [[maybe_unused]] td::DeviceMesh mesh{.shape = {2}};
  [[maybe_unused]] td::ShardingOptions sharding{.timeout_ms = 1000};
  [[maybe_unused]] tandem::losses::CrossentropyOptions crossentropy{.from_logits = true};
  [[maybe_unused]] tandem::GradientClipping clipping{.clipnorm = 1.0};
  [[maybe_unused]] tandem::optimizers::SGDOptions sgd{.momentum = 0.9};
  [[maybe_unused]] tandem::optimizers::AdamOptions adam{.beta_1 = 0.8};
  [[maybe_unused]] tandem::optimizers::AdamWOptions adamw{.weight_decay = 0.01};
  [[maybe_unused]] tandem::optimizers::RMSpropOptions rmsprop{.rho = 0.8};
  [[maybe_unused]] tandem::schedules::CosineDecayOptions cosine{.alpha = 0.1};
  [[maybe_unused]] tl::DenseOptions dense{.use_bias = false};
  [[maybe_unused]] tl::Conv2DOptions conv{.strides = 2};
  [[maybe_unused]] tl::Pooling2DOptions pooling{.padding = "same"};
  [[maybe_unused]] tl::GlobalPooling2DOptions global_pooling{.keepdims = true};
  [[maybe_unused]] tl::BatchNormalizationOptions batch_norm{.momentum = 0.9};
  [[maybe_unused]] tl::LayerNormalizationOptions layer_norm{.epsilon = 1e-5};
  [[maybe_unused]] tl::EmbeddingOptions embedding{.embeddings_initializer = "zeros"};
  [[maybe_unused]] tl::ConcatenateOptions concatenate{.axis = 1};
  [[maybe_unused]] tl::MultiHeadAttentionOptions attention{.value_dim = 8};
  [[maybe_unused]] tl::PositionEmbeddingOptions position{.initializer = "zeros"};
  [[maybe_unused]] tl::NormalizationOptions normalization{.invert = true};
  [[maybe_unused]] tl::ResizingOptions resizing{.interpolation = "nearest"};
  [[maybe_unused]] tl::UpSampling2DOptions up_sampling{.interpolation = "bilinear"};
  [[maybe_unused]] tl::CategoryEncodingOptions category_encoding{.output_mode = "count"};
  [[maybe_unused]] tl::IntegerLookupOptions integer_lookup{.num_oov_indices = 2};
}
