// Tandem: a Keras-style training framework. Include this one header.
#pragma once

#include "tandem/augmentation.h"
#include "tandem/callbacks.h"
#include "tandem/data.h"
#include "tandem/data_files.h"
#include "tandem/distribute.h"
#include "tandem/errors.h"
#include "tandem/layer.h"
#include "tandem/layers.h"
#include "tandem/losses.h"
#include "tandem/model.h"
#include "tandem/ops.h"
#include "tandem/optimizers.h"
#include "tandem/saving.h"
#include "tandem/tensor.h"
#include "tandem/watchdog.h"
