// padless tokenize train: trains a SentencePiece model with padless's fixed special tokens on plain
// text or on the text columns of labeled files, and saves the label map of labeled data beside it.
// The work is tokenize::Tokenizer's; this file maps flags onto it and prints.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "cli_util.h"
#include "common_flags.h"
#include "flag_spelling.h"
#include "padless/corpus/corpus_reader.h"
#include "padless/corpus/label_map.h"
#include "padless/tokenize/special_tokens.h"
#include "padless/tokenize/tokenizer.h"
#include "path_checks.h"
#include "tokenize_actions.h"
#include "tokenize_data.h"

ABSL_FLAG(std::string, input, "",
          "tokenize train: comma-separated training files; labeled TSV/CSV/JSONL files give their "
          "text columns, any other file is plain text, one sentence per line");
ABSL_FLAG(std::string, model_type, "unigram", "tokenize train: unigram or bpe");
ABSL_FLAG(double, character_coverage, 0.9995,
          "tokenize train: share of characters the vocabulary covers (rest: [UNK])");
ABSL_FLAG(std::string, user_symbols, "",
          "tokenize train: comma-separated symbols that always stay single pieces");
ABSL_FLAG(int64_t, input_sentence_size, 0,
          "tokenize train: sample this many sentences for training (0: all)");

namespace padless::cli {
namespace {

namespace tok = ::padless::tokenize;

// "out/m" and "out/m.model" both name the model out/m.model.
std::string ModelPath(absl::string_view prefix) {
  return absl::EndsWith(prefix, ".model") ? std::string(prefix) : absl::StrCat(prefix, ".model");
}

bool IsLabeledFile(const std::string& path) {
  if (absl::GetFlag(FLAGS_format) != "auto") return true;
  return corpus::FormatFromPath(path).ok();
}

bool IsLabeledFileAny(const std::vector<std::string>& files) {
  return std::any_of(files.begin(), files.end(), IsLabeledFile);
}

// The training flags onto tokenize::TrainOptions; errors are usage errors.
absl::StatusOr<tok::TrainOptions> TrainOptionsFromFlags() {
  tok::TrainOptions options;
  options.model_type = absl::GetFlag(FLAGS_model_type);
  if (options.model_type != "unigram" && options.model_type != "bpe") {
    return UsageError(absl::StrCat(FlagAsWritten("model_type"), " must be unigram or bpe, not '",
                                   options.model_type, "'"));
  }
  options.vocab_size = absl::GetFlag(FLAGS_vocab_size);
  if (options.vocab_size <= tok::kNumSpecialTokens) {
    return UsageError(absl::StrCat(FlagAsWritten("vocab_size"), " must be >= ",
                                   tok::kNumSpecialTokens + 1, ", got ", options.vocab_size));
  }
  options.character_coverage = absl::GetFlag(FLAGS_character_coverage);
  if (!(options.character_coverage > 0 && options.character_coverage <= 1)) {
    return UsageError(absl::StrCat(FlagAsWritten("character_coverage"), " must be in (0, 1], got ",
                                   options.character_coverage));
  }
  const std::string symbols = absl::GetFlag(FLAGS_user_symbols);
  if (!symbols.empty()) options.user_defined_symbols = absl::StrSplit(symbols, ',');
  options.input_sentence_size = absl::GetFlag(FLAGS_input_sentence_size);
  absl::StatusOr<int> threads = ThreadsFromFlags();
  if (!threads.ok()) return threads.status();
  options.num_threads = *threads;
  options.verbose = false;
  return options;
}

// Labeled data: train on its text columns, held in memory (plain files are read by lines). The
// labels of the labeled files are appended to `labels`.
absl::StatusOr<std::vector<std::string>> ReadTrainingTexts(const std::vector<std::string>& files,
                                                           std::vector<std::string>& labels) {
  std::vector<std::string> texts;
  for (const std::string& file : files) {
    if (!IsLabeledFile(file)) {
      std::ifstream in(file);
      if (!in) return absl::NotFoundError(absl::StrCat("cannot open training file ", file));
      for (std::string line; std::getline(in, line);) {
        if (!line.empty()) texts.push_back(std::move(line));
      }
      continue;
    }
    absl::StatusOr<corpus::RawCorpus> corpus = ReadData(file);
    if (!corpus.ok()) return corpus.status();
    for (corpus::Example& e : corpus->examples) {
      labels.push_back(e.label);
      texts.push_back(std::move(e.text));
      if (e.has_pair && !e.text_pair.empty()) texts.push_back(std::move(e.text_pair));
    }
  }
  return texts;
}

}  // namespace

absl::Status TokenizeTrain(const std::vector<std::string>& rest) {
  if (!rest.empty()) return UsageError(absl::StrCat("unexpected argument '", rest[0], "'"));
  const std::string input = absl::GetFlag(FLAGS_input), out = absl::GetFlag(FLAGS_out);
  if (absl::Status s = RequireFlag(input, "input"); !s.ok()) return s;
  if (absl::Status s = RequireFlag(out, "out"); !s.ok()) return s;
  absl::StatusOr<tok::TrainOptions> options = TrainOptionsFromFlags();
  if (!options.ok()) return options.status();

  const std::vector<std::string> files = absl::StrSplit(input, ',', absl::SkipEmpty());
  if (files.empty()) return UsageError(absl::StrCat(FlagAsWritten("input"), " names no file"));
  if (IsLabeledFileAny(files)) {
    if (absl::StatusOr<corpus::ReaderOptions> o = ReaderFromFlags(); !o.ok()) return o.status();
  }
  std::vector<PathFlag> paths;
  for (const std::string& file : files) paths.push_back({"input", file, PathUse::kInputTextFile});
  paths.push_back({"out", ModelPath(out), PathUse::kOutputFile});
  if (absl::Status s = CheckPathFlags(paths); !s.ok()) return s;
  const bool any_labeled = IsLabeledFileAny(files);
  absl::StatusOr<tok::Tokenizer> tokenizer = absl::UnknownError("not trained");
  std::vector<std::string> labels;
  int64_t sentences = 0;
  if (!any_labeled) {
    if (!Quiet()) absl::FPrintF(stderr, "training on %d plain text file(s)\n", files.size());
    tokenizer = tok::Tokenizer::TrainFromFiles(files, *options);
  } else {
    absl::StatusOr<std::vector<std::string>> texts = ReadTrainingTexts(files, labels);
    if (!texts.ok()) return texts.status();
    sentences = static_cast<int64_t>(texts->size());
    if (!Quiet()) absl::FPrintF(stderr, "training on %d texts\n", sentences);
    tokenizer = tok::Tokenizer::TrainFromSentences(*texts, *options);
  }
  if (!tokenizer.ok()) return tokenizer.status();
  const std::string model_path = ModelPath(out);
  if (absl::Status s = tokenizer->Save(model_path); !s.ok()) return s;
  absl::PrintF("model: %s\nvocab_size: %d\nmodel_type: %s\n", model_path, tokenizer->vocab_size(),
               options->model_type);
  if (sentences > 0) absl::PrintF("training_texts: %d\n", sentences);
  if (!labels.empty()) {
    const corpus::LabelMap map = corpus::LabelMap::FromLabels(labels);
    const std::string labels_path = corpus::LabelMap::PathForModel(model_path);
    if (absl::Status s = map.Save(labels_path); !s.ok()) return s;
    absl::PrintF("labels: %s (%d classes)\n", labels_path, map.size());
  }
  return absl::OkStatus();
}

}  // namespace padless::cli
