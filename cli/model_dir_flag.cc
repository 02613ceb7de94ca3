#include "model_dir_flag.h"

namespace padless::cli {

PathFlag ModelDirFlag(const std::string& dir) {
  return {"model", dir, PathUse::kInputDirectory, {"config.json"}};
}

PathFlag ServableModelDirFlag(const std::string& dir) {
  return {"model", dir, PathUse::kInputDirectory, {}, {"config.json", "modules.json"}};
}

}  // namespace padless::cli
