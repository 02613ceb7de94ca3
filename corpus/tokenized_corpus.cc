#include "padless/corpus/tokenized_corpus.h"

#include <algorithm>
#include <cassert>
#include <utility>

#include "mapped_tokens.h"
#include "padless/corpus/corpus_cache_writer.h"

namespace padless::corpus {

void TokenizedCorpus::Add(absl::Span<const int32_t> ids, absl::Span<const int8_t> type_ids,
                          int64_t label) {
  assert(mapped_ == nullptr && rows_.empty() && "Add on a mapped corpus or a subset");
  if (!type_ids.empty()) {
    // First example with type ids after examples without: back-fill zeros to keep one layout.
    if (type_ids_.size() < tokens_.size()) type_ids_.resize(tokens_.size(), 0);
    type_ids_.insert(type_ids_.end(), type_ids.begin(), type_ids.end());
  } else if (!type_ids_.empty()) {
    type_ids_.resize(type_ids_.size() + ids.size(), 0);
  }
  tokens_.insert(tokens_.end(), ids.begin(), ids.end());
  offsets_.push_back(static_cast<int64_t>(tokens_.size()));
  labels_.push_back(label);
  total_tokens_ = static_cast<int64_t>(tokens_.size());
}

void TokenizedCorpus::Reserve(size_t examples, size_t tokens) {
  tokens_.reserve(tokens);
  offsets_.reserve(examples + 1);
  labels_.reserve(examples);
}

bool TokenizedCorpus::has_type_ids() const {
  return mapped_ != nullptr ? mapped_->type_ids != nullptr : !type_ids_.empty();
}

const int32_t* TokenizedCorpus::token_data() const {
  return mapped_ != nullptr ? mapped_->tokens : tokens_.data();
}

const int8_t* TokenizedCorpus::type_id_data() const {
  return mapped_ != nullptr ? mapped_->type_ids : type_ids_.data();
}

absl::Span<const int8_t> TokenizedCorpus::type_ids(size_t i) const {
  if (!has_type_ids()) return {};
  return absl::MakeConstSpan(type_id_data() + Begin(i), static_cast<size_t>(length(i)));
}

std::vector<int64_t> TokenizedCorpus::Lengths() const {
  std::vector<int64_t> lengths(size());
  for (size_t i = 0; i < size(); ++i) lengths[i] = length(i);
  return lengths;
}

absl::Span<const int32_t> TokenizedCorpus::flat_tokens() const {
  return absl::MakeConstSpan(token_data(), static_cast<size_t>(offsets_.back()));
}

TokenIdRange TokenizedCorpus::token_id_range() const {
  if (mapped_ != nullptr) return mapped_->range;
  TokenIdRange range;
  if (tokens_.empty()) return range;
  const auto [lo, hi] = std::minmax_element(tokens_.begin(), tokens_.end());
  return {*lo, *hi};
}

absl::Status TokenizedCorpus::VerifyExample(size_t i) const {
  if (mapped_ == nullptr) return absl::OkStatus();
  const auto begin = static_cast<uint64_t>(Begin(i));
  return mapped_->VerifyTokens(begin, begin + static_cast<uint64_t>(length(i)));
}

absl::Status TokenizedCorpus::VerifyAll() const {
  return mapped_ != nullptr ? mapped_->VerifyAll() : absl::OkStatus();
}

TokenizedCorpus TokenizedCorpus::Subset(absl::Span<const size_t> indices) const {
  TokenizedCorpus subset;
  subset.label_names_ = label_names_;
  if (mapped_ == nullptr) {
    for (size_t i : indices) subset.Add(tokens(i), type_ids(i), label(i));
    return subset;
  }
  subset.mapped_ = mapped_;
  subset.offsets_ = offsets_;
  subset.rows_.reserve(indices.size());
  subset.labels_.reserve(indices.size());
  for (size_t i : indices) {
    subset.rows_.push_back(static_cast<int64_t>(Row(i)));
    subset.labels_.push_back(label(i));
    subset.total_tokens_ += length(i);
  }
  return subset;
}

absl::Status TokenizedCorpus::Save(const std::string& path, uint64_t fingerprint) const {
  if (absl::Status s = VerifyAll(); !s.ok()) return s;
  absl::StatusOr<std::unique_ptr<CorpusCacheWriter>> writer =
      CorpusCacheWriter::Open(path, fingerprint);
  if (!writer.ok()) return writer.status();
  for (size_t i = 0; i < size(); ++i) {
    if (absl::Status s = (*writer)->Add(tokens(i), type_ids(i), label(i)); !s.ok()) return s;
  }
  (*writer)->set_label_names(label_names_);
  return (*writer)->Commit();
}

}  // namespace padless::corpus
