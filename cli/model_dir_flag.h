// The --model flag of eval and predict: a trained model directory.
#ifndef PADLESS_CLI_MODEL_DIR_FLAG_H_
#define PADLESS_CLI_MODEL_DIR_FLAG_H_

#include <string>

#include "path_checks.h"

namespace padless::cli {

// The path check of --model: a directory holding config.json, which identifies it as a model
// (model_files::LoadModelDir names any other missing member).
PathFlag ModelDirFlag(const std::string& dir);

}  // namespace padless::cli

#endif  // PADLESS_CLI_MODEL_DIR_FLAG_H_
