// Checks a PlannerOptions before the planner uses it, naming the offending field. Private to the
// planner.
#ifndef PADLESS_BATCHING_PLANNER_OPTIONS_VALIDATION_H_
#define PADLESS_BATCHING_PLANNER_OPTIONS_VALIDATION_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "padless/batching/planner.h"

namespace padless::batching::internal {

// InvalidArgument "PlannerOptions.<field>: <why>".
absl::Status InvalidPlannerOption(absl::string_view field, absl::string_view why);

// OK, or the first invalid field (or combination of fields) of `o`.
absl::Status ValidatePlannerOptions(const PlannerOptions& o);

}  // namespace padless::batching::internal

#endif  // PADLESS_BATCHING_PLANNER_OPTIONS_VALIDATION_H_
