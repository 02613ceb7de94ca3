// The --model flag of eval, predict, embed and serve: a model directory.
#ifndef PADLESS_CLI_MODEL_DIR_FLAG_H_
#define PADLESS_CLI_MODEL_DIR_FLAG_H_

#include <string>

#include "path_checks.h"

namespace padless::cli {

// The path check of --model: a directory holding config.json, which identifies it as a model
// (model_files::LoadModelDir names any other missing member).
PathFlag ModelDirFlag(const std::string& dir);
// The --model of embed and serve, which also take a sentence-transformers directory: config.json
// or modules.json (whose Transformer module may live in a subfolder, as older versions saved it).
PathFlag ServableModelDirFlag(const std::string& dir);

}  // namespace padless::cli

#endif  // PADLESS_CLI_MODEL_DIR_FLAG_H_
