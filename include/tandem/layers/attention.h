// (filled in as the layers land)
#pragma once

#include "tandem/layer.h"
