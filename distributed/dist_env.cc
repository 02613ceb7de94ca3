#include "padless/distributed/dist_env.h"

#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace padless::distributed {

namespace {

using GetEnv = std::function<const char*(const char*)>;

// An integer variable in [min, max]; `fallback` when it is unset and not required.
absl::StatusOr<int> IntVariable(const GetEnv& getenv, const char* name, int min, int max,
                                bool required, int fallback) {
  const char* value = getenv(name);
  if (value == nullptr || *value == '\0') {
    if (!required) return fallback;
    return absl::InvalidArgumentError(
        absl::StrCat("environment: ", name, " is not set (WORLD_SIZE is, so it must be)"));
  }
  int parsed = 0;
  if (!absl::SimpleAtoi(value, &parsed) || parsed < min || parsed > max) {
    return absl::InvalidArgumentError(absl::StrCat(
        "environment: ", name, "='", value, "' is not an integer in [", min, ", ", max, "]"));
  }
  return parsed;
}

}  // namespace

absl::StatusOr<DistEnv> DistEnvFromEnvironment(const GetEnv& getenv_in) {
  const GetEnv getenv =
      getenv_in ? getenv_in : [](const char* name) -> const char* { return std::getenv(name); };
  DistEnv env;
  if (getenv("WORLD_SIZE") == nullptr) return env;
  absl::StatusOr<int> world = IntVariable(getenv, "WORLD_SIZE", 1, 1 << 20, true, 1);
  if (!world.ok()) return world.status();
  env.world_size = *world;
  absl::StatusOr<int> rank = IntVariable(getenv, "RANK", 0, env.world_size - 1, true, 0);
  if (!rank.ok()) return rank.status();
  env.rank = *rank;
  absl::StatusOr<int> local = IntVariable(getenv, "LOCAL_RANK", 0, 1 << 20, false, env.rank);
  if (!local.ok()) return local.status();
  env.local_rank = *local;
  absl::StatusOr<int> local_world =
      IntVariable(getenv, "LOCAL_WORLD_SIZE", 1, env.world_size, false, env.world_size);
  if (!local_world.ok()) return local_world.status();
  env.local_world_size = *local_world;
  absl::StatusOr<int> node =
      IntVariable(getenv, "GROUP_RANK", 0, 1 << 20, false, env.rank / env.local_world_size);
  if (!node.ok()) return node.status();
  env.node_rank = *node;
  absl::StatusOr<int> port = IntVariable(getenv, "MASTER_PORT", 1, 65535, env.distributed(), 29500);
  if (!port.ok()) return port.status();
  env.master_port = *port;
  const char* addr = getenv("MASTER_ADDR");
  if (addr != nullptr && *addr != '\0') {
    env.master_addr = addr;
  } else if (env.distributed()) {
    return absl::InvalidArgumentError(
        "environment: MASTER_ADDR is not set (WORLD_SIZE is, so it must be)");
  }
  return env;
}

}  // namespace padless::distributed
