// padless tokenize train|encode|stats: trains SentencePiece models with padless's fixed special
// tokens, encodes a labeled corpus into the TokenizedCorpus cache, and prints the token-length
// distribution of a corpus. Only flags and printing live in cli/; the work is in padless_tokenize
// and padless_corpus. This file dispatches to the actions (tokenize_actions.h), one file each:
// tokenize_train_command.cc, tokenize_encode_command.cc and tokenize_stats_command.cc.
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "cli_util.h"
#include "subcommand.h"
#include "tokenize_actions.h"

namespace padless::cli {
namespace {

int RunTokenize(const std::vector<std::string>& args) {
  if (args.empty()) return Usage("tokenize", "missing action: train, encode or stats");
  const std::string action = args[0];
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  absl::Status status;
  if (action == "train") {
    status = TokenizeTrain(rest);
  } else if (action == "encode") {
    status = TokenizeEncode(rest);
  } else if (action == "stats") {
    status = TokenizeStats(rest);
  } else {
    return Usage("tokenize",
                 absl::StrCat("unknown action '", action, "' (expected train, encode or stats)"));
  }
  if (status.ok()) return kExitOk;
  return ReportError(absl::StrCat("tokenize ", action), status);
}

}  // namespace

const Subcommand kTokenizeCommand = {
    "tokenize",
    "train, apply and inspect tokenizers (SentencePiece, Hugging Face WordPiece, byte-level BPE)",
    "usage: padless tokenize train --input FILE[,FILE...] --out PREFIX [--vocab-size N]\n"
    "                              [--model-type unigram|bpe] [--character-coverage C]\n"
    "                              [--user-symbols A,B]\n"
    "       padless tokenize encode --model M.model --data FILE [--out CACHE] [--max-len N]\n"
    "       padless tokenize encode --model M --data FILE --ids-out PATH [--max-len N]\n"
    "       padless tokenize stats --model M.model --data FILE [--max-len N] [--csv PATH]\n"
    "                              [--svg PATH]\n\n"
    "train: trains a SentencePiece model with [PAD]=0 [UNK]=1 [CLS]=2 [SEP]=3 [MASK]=4 and\n"
    "  writes PREFIX.model (plus PREFIX.labels.json when trained on labeled data).\n"
    "encode: encodes a labeled corpus; with --out, loads or (re)builds the token cache there;\n"
    "  with --ids-out, writes each example's ids (special tokens included) as a line of text.\n"
    "--model: a padless .model, a Hugging Face tokenizer.json (WordPiece, or byte-level BPE as\n"
    "  RoBERTa's) or a model directory\n"
    "  (padless, or Hugging Face's with tokenizer.json or XLM-R's sentencepiece.bpe.model).\n"
    "stats: prints the token-length distribution (special tokens included, before truncation).\n"
    "Exit codes: 0 ok, 1 runtime failure (data, model, I/O), 2 usage error.",
    {"input",
     "vocab_size",
     "model_type",
     "character_coverage",
     "user_symbols",
     "input_sentence_size",
     "data",
     "model",
     "out",
     "max_len",
     "truncation",
     "pair_truncation",
     "head_fraction",
     "text_field",
     "text_pair_field",
     "label_field",
     "format",
     "skip_bad_rows",
     "threads",
     "csv",
     "svg",
     "bin_width",
     "ids_out",
     "quiet"},
    RunTokenize};

}  // namespace padless::cli
