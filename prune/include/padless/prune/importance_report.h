// The importance scores of a model as files a person reads: a CSV with one row per unit, and an
// SVG heat map of the heads (layer x original head; heads pruned earlier drawn hatched grey).
#ifndef PADLESS_PRUNE_IMPORTANCE_REPORT_H_
#define PADLESS_PRUNE_IMPORTANCE_REPORT_H_

#include <string>

#include "absl/status/status.h"
#include "padless/models/encoder_config.h"
#include "padless/prune/unit_importance.h"

namespace padless::prune {

// CSV columns: kind (head or ffn), layer, unit (index in the layer as it is now), original (a
// head's index in the unpruned layer; for FFN neurons the unit again, since their original
// indices are not recorded), importance, normalized (divided by the layer's L2 norm, what
// PlanPruning ranks). Scores must match `config` (PlanPruning's check); written atomically.
std::string ImportanceCsv(const models::EncoderConfig& config, const UnitImportance& importance);
std::string HeadHeatmapSvg(const models::EncoderConfig& config, const UnitImportance& importance);
absl::Status WriteImportanceReport(const std::string& csv_path, const std::string& svg_path,
                                   const models::EncoderConfig& config,
                                   const UnitImportance& importance);

}  // namespace padless::prune

#endif  // PADLESS_PRUNE_IMPORTANCE_REPORT_H_
