#include "padless/cuda/memory_meter.h"
