// padless: command-line front end. Dispatches `padless <subcommand> [args] [--flags]`.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli_util.h"
#include "flag_spelling.h"
#include "subcommand.h"

namespace padless::cli {
namespace {

const std::vector<const Subcommand*>& Subcommands() {
  static const std::vector<const Subcommand*> kAll = {
      &kTokenizeCommand, &kBenchPaddingCommand, &kTrainCommand,         &kEvalCommand,
      &kPredictCommand,  &kEmbedCommand,        &kProfileMemoryCommand, &kExportHfCommand,
      &kServeCommand,    &kPruneCommand};
  return kAll;
}

void PrintTopLevelHelp(FILE* out) {
  absl::FPrintF(out,
                "padless: transformer text classification without padding waste.\n\n"
                "usage: padless <command> [args] [--flags]\n\ncommands:\n");
  for (const Subcommand* c : Subcommands()) absl::FPrintF(out, "  %-16s %s\n", c->name, c->summary);
  absl::FPrintF(out, "\n`padless <command> --help` describes a command and its flags.\n");
}

void PrintCommandHelp(const Subcommand& c, FILE* out) {
  absl::FPrintF(out, "%s\n\nflags:\n", c.usage);
  for (const std::string& name : c.flags) {
    const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    if (flag == nullptr) continue;
    std::string dashed = name;
    std::replace(dashed.begin(), dashed.end(), '_', '-');
    absl::FPrintF(out, "  --%-18s %s (default: \"%s\")\n", dashed, flag->Help(),
                  flag->DefaultValue());
  }
}

// The flag name of an argument such as `--max-len=5`, `--nofoo` or `-x`; empty if not a flag.
std::string FlagName(const char* arg) {
  if (arg[0] != '-' || arg[1] == '\0') return "";
  const char* p = arg + (arg[1] == '-' ? 2 : 1);
  std::string name(p, std::strcspn(p, "="));
  for (char& ch : name) {
    if (ch == '-') ch = '_';
  }
  return name;
}

int Main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "padless <command> [args] [--flags]; `padless --help` lists commands");
  if (argc < 2 || FlagName(argv[1]) == "help" || FlagName(argv[1]) == "h" ||
      std::strcmp(argv[1], "help") == 0) {
    PrintTopLevelHelp(argc < 2 ? stderr : stdout);
    return argc < 2 ? kExitUsage : kExitOk;
  }
  if (FlagName(argv[1]) == "version") {
    absl::PrintF("padless 0.1.0\n");
    return kExitOk;
  }
  const Subcommand* command = nullptr;
  for (const Subcommand* c : Subcommands()) {
    if (argv[1] == std::string(c->name)) command = c;
  }
  if (command == nullptr) {
    absl::FPrintF(stderr, "padless: error: unknown command '%s'\n\n", argv[1]);
    PrintTopLevelHelp(stderr);
    return kExitUsage;
  }
  // Flags are set through absl's reflection rather than absl::ParseCommandLine, so that a bad flag
  // exits with the usage code (2) after naming the subcommand, and a flag the subcommand does not
  // read is an error instead of a silent no-op. Dashes and underscores are equivalent.
  std::vector<std::string> rest;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") {
      for (++i; i < argc; ++i) rest.emplace_back(argv[i]);
      break;
    }
    const std::string name = FlagName(argv[i]);
    if (name.empty()) {
      rest.push_back(arg);
      continue;
    }
    if (name == "help" || name == "h") {
      PrintCommandHelp(*command, stdout);
      return kExitOk;
    }
    auto usage_error = [&](const std::string& why) { return Usage(command->name, why); };
    const bool known =
        std::find(command->flags.begin(), command->flags.end(), name) != command->flags.end();
    // A boolean's negation: absl's --nofoo, and --no-foo as GNU tools spell it.
    const std::string positive =
        name.rfind("no", 0) != 0 ? "" : name.substr(name.rfind("no_", 0) == 0 ? 3 : 2);
    const bool negated = !known && name.rfind("no", 0) == 0 &&
                         std::find(command->flags.begin(), command->flags.end(), positive) !=
                             command->flags.end();
    if (!known && !negated) return usage_error(absl::StrCat("unknown flag '", arg, "'"));
    absl::CommandLineFlag* flag = absl::FindCommandLineFlag(negated ? positive : name);
    if (flag == nullptr) return usage_error(absl::StrCat("unknown flag '", arg, "'"));
    const size_t eq = arg.find('=');
    if (!negated) RecordFlagSpelling(name, arg.substr(0, eq));
    std::string value;
    if (negated) {
      if (!flag->IsOfType<bool>() || eq != std::string::npos) {
        return usage_error(absl::StrCat("'", arg, "' is not a boolean flag"));
      }
      value = "false";
    } else if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
    } else if (flag->IsOfType<bool>()) {
      value = "true";
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return usage_error(absl::StrCat("flag '", arg, "' needs a value"));
    }
    std::string error;
    if (!flag->ParseFrom(value, &error)) {
      return usage_error(absl::StrCat("bad value '", value, "' for ", arg, ": ", error));
    }
  }
  return command->run(rest);
}

}  // namespace
}  // namespace padless::cli

int main(int argc, char** argv) { return padless::cli::Main(argc, argv); }
