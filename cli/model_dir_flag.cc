#include "model_dir_flag.h"

namespace padless::cli {

PathFlag ModelDirFlag(const std::string& dir) {
  return {"model", dir, PathUse::kInputDirectory, {"config.json"}};
}

}  // namespace padless::cli
