#include "padless/corpus/corpus_cache_writer.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "cache_format.h"

namespace padless::corpus {
namespace internal {

// The per-block checksums of a byte stream (cache_format.h: BlockChecksum of each block), computed
// as the bytes pass, so the bulk is never read back.
class BlockHasher {
 public:
  explicit BlockHasher(uint64_t block_bytes) : block_bytes_(block_bytes) {}

  void Update(const char* data, size_t n) {
    while (n > 0) {
      if (filled_ == 0) {
        current_ = Fnv1a();
        current_.UpdateValue(static_cast<uint64_t>(sums_.size()));
      }
      const size_t take = static_cast<size_t>(std::min<uint64_t>(n, block_bytes_ - filled_));
      current_.Update(data, take);
      filled_ += take;
      data += take;
      n -= take;
      if (filled_ == block_bytes_) Close();
    }
  }

  std::vector<uint64_t> Finish() {
    if (filled_ > 0) Close();
    return std::move(sums_);
  }

 private:
  void Close() {
    sums_.push_back(current_.value());
    filled_ = 0;
  }

  uint64_t block_bytes_;
  uint64_t filled_ = 0;
  Fnv1a current_;
  std::vector<uint64_t> sums_;
};

}  // namespace internal

namespace {

template <typename T>
size_t Bytes(const std::vector<T>& v) {
  return v.size() * sizeof(T);
}

}  // namespace

absl::StatusOr<std::unique_ptr<CorpusCacheWriter>> CorpusCacheWriter::Open(const std::string& path,
                                                                           uint64_t fingerprint) {
  absl::StatusOr<std::unique_ptr<base::AtomicFileWriter>> out = base::AtomicFileWriter::Open(path);
  if (!out.ok()) return out.status();
  // Next to the cache rather than in /tmp, which may be a RAM disk; unlinked at once, so nothing is
  // left behind whatever happens.
  std::string types_path = absl::StrCat((*out)->temp_path(), ".types");
  std::FILE* types = std::fopen(types_path.c_str(), "w+b");
  if (types == nullptr) {
    return absl::UnavailableError(absl::StrCat("cannot create ", types_path, " for the cache ",
                                               path, ": ", std::strerror(errno)));
  }
  ::unlink(types_path.c_str());
  return std::unique_ptr<CorpusCacheWriter>(
      new CorpusCacheWriter(*std::move(out), types, std::move(types_path), fingerprint));
}

CorpusCacheWriter::CorpusCacheWriter(std::unique_ptr<base::AtomicFileWriter> out, std::FILE* types,
                                     std::string types_path, uint64_t fingerprint)
    : out_(std::move(out)),
      types_(types),
      types_path_(std::move(types_path)),
      fingerprint_(fingerprint),
      hasher_(std::make_unique<internal::BlockHasher>(internal::kCacheBlockBytes)) {}

CorpusCacheWriter::~CorpusCacheWriter() {
  if (types_ != nullptr) std::fclose(types_);
}

absl::Status CorpusCacheWriter::Write(const void* data, size_t n, bool bulk) {
  if (!status_.ok() || n == 0) return status_;  // nothing to write; data may be null
  if (bulk) hasher_->Update(static_cast<const char*>(data), n);
  written_ += n;
  status_ = out_->Append(data, n);
  return status_;
}

absl::Status CorpusCacheWriter::AppendTypeIds(absl::Span<const int8_t> type_ids, size_t zeros) {
  static const int8_t kZeros[4096] = {};
  // An empty span's data() may be null, which fwrite must not get even for 0 bytes.
  bool ok = type_ids.empty() ||
            std::fwrite(type_ids.data(), 1, type_ids.size(), types_) == type_ids.size();
  for (size_t left = zeros; ok && left > 0;) {
    const size_t n = std::min(left, sizeof(kZeros));
    ok = std::fwrite(kZeros, 1, n, types_) == n;
    left -= n;
  }
  if (!ok && status_.ok()) {
    status_ = absl::DataLossError(
        absl::StrCat("cannot write the type ids to ", types_path_, ": ", std::strerror(errno)));
  }
  return status_;
}

absl::Status CorpusCacheWriter::Add(absl::Span<const int32_t> ids,
                                    absl::Span<const int8_t> type_ids, int64_t label) {
  if (!status_.ok()) return status_;
  if (!type_ids.empty() && !typed_) {
    typed_ = true;  // back-fill zeros for the examples before, as TokenizedCorpus::Add does
    if (absl::Status s = AppendTypeIds({}, static_cast<size_t>(tokens())); !s.ok()) return s;
  }
  if (typed_) {
    if (absl::Status s = AppendTypeIds(type_ids, type_ids.empty() ? ids.size() : 0); !s.ok()) {
      return s;
    }
  }
  if (absl::Status s = Write(ids.data(), ids.size() * sizeof(int32_t), /*bulk=*/true); !s.ok()) {
    return s;
  }
  for (int32_t id : ids) {
    min_id_ = std::min(min_id_, id);
    max_id_ = std::max(max_id_, id);
  }
  offsets_.push_back(tokens() + static_cast<int64_t>(ids.size()));
  labels_.push_back(label);
  return absl::OkStatus();
}

absl::Status CorpusCacheWriter::AddAll(const TokenizedCorpus& corpus) {
  for (size_t i = 0; i < corpus.size(); ++i) {
    if (absl::Status s = Add(corpus.tokens(i), corpus.type_ids(i), corpus.label(i)); !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::Status CorpusCacheWriter::RemapLabels(absl::Span<const int64_t> new_ids) {
  for (int64_t& label : labels_) {
    if (label < 0) continue;  // unlabeled (-1) stays so
    if (static_cast<size_t>(label) >= new_ids.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("label id ", label, " outside the remap table of ", new_ids.size()));
    }
    label = new_ids[static_cast<size_t>(label)];
  }
  return absl::OkStatus();
}

absl::Status CorpusCacheWriter::CopyTypeIdsToFile() {
  if (!typed_) return absl::OkStatus();
  std::vector<char> buffer(1 << 20);
  std::rewind(types_);
  uint64_t copied = 0;
  while (size_t n = std::fread(buffer.data(), 1, buffer.size(), types_)) {
    if (absl::Status s = Write(buffer.data(), n, /*bulk=*/true); !s.ok()) return s;
    copied += n;
  }
  if (copied != static_cast<uint64_t>(tokens())) {
    return absl::DataLossError(absl::StrCat("cannot read the type ids back from ", types_path_,
                                            ": ", copied, " of ", tokens(), " bytes"));
  }
  return absl::OkStatus();
}

absl::Status CorpusCacheWriter::AppendIndexAndTrailer() {
  static const char kZeros[8] = {};
  if (absl::Status s = Write(kZeros, internal::PaddedTo8(written_) - written_, false); !s.ok()) {
    return s;
  }
  const std::vector<uint64_t> block_sums = hasher_->Finish();
  std::string names;
  const uint64_t count = label_names_.size();
  names.append(reinterpret_cast<const char*>(&count), sizeof(count));
  for (const std::string& name : label_names_) {
    const uint64_t length = name.size();
    names.append(reinterpret_cast<const char*>(&length), sizeof(length));
    names.append(name);
  }
  names.resize(internal::PaddedTo8(names.size()), '\0');

  internal::Fnv1a index;
  index.Update(offsets_.data(), Bytes(offsets_));
  index.Update(labels_.data(), Bytes(labels_));
  index.Update(block_sums.data(), Bytes(block_sums));
  index.Update(names.data(), names.size());
  for (const auto& [data, n] : {std::pair<const void*, size_t>{offsets_.data(), Bytes(offsets_)},
                                {labels_.data(), Bytes(labels_)},
                                {block_sums.data(), Bytes(block_sums)},
                                {names.data(), names.size()}}) {
    if (absl::Status s = Write(data, n, false); !s.ok()) return s;
  }

  internal::CacheTrailer t{};
  std::memcpy(t.magic, internal::kCacheMagic, sizeof(t.magic));
  t.version = internal::kCacheVersion;
  t.flags = typed_ ? internal::kFlagTypeIds : 0u;
  t.fingerprint = fingerprint_;
  t.num_examples = labels_.size();
  t.num_tokens = static_cast<uint64_t>(tokens());
  t.block_bytes = internal::kCacheBlockBytes;
  t.file_bytes = written_ + sizeof(t);
  t.names_bytes = names.size();
  // An empty corpus records the empty range TokenIdRange{} stands for.
  t.min_token = tokens() > 0 ? min_id_ : TokenIdRange{}.min;
  t.max_token = tokens() > 0 ? max_id_ : TokenIdRange{}.max;
  t.index_checksum = index.value();
  t.trailer_checksum = internal::TrailerChecksum(t);
  return Write(&t, sizeof(t), false);
}

absl::Status CorpusCacheWriter::Commit() {
  if (absl::Status s = CopyTypeIdsToFile(); !s.ok()) return s;
  if (absl::Status s = AppendIndexAndTrailer(); !s.ok()) return s;
  return out_->Commit();
}

}  // namespace padless::corpus
