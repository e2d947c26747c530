// Row statistics, head average, rollout and head profiles (see analysis.h for the rules), and
// AnalyzeText, which runs them all for one text.
#include "core/analysis.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

#include <Eigen/Core>

#include "core/kernels.h"
#include "core/row_math.h"
#include "core/unicode.h"

namespace attn {

namespace {

RowStats FromSummary(const RowSummary& summary, int32_t n) {
  RowStats stats;
  if (n <= 0) return stats;
  stats.max = summary.max;
  stats.argmax = summary.argmax;
  stats.sum = static_cast<float>(summary.sum);
  stats.ratio_to_uniform = stats.max * static_cast<float>(n);
  stats.entropy = summary.entropy;
  stats.normalized_entropy =
      n > 1 ? static_cast<float>(stats.entropy / std::log(static_cast<double>(n))) : 0.0f;
  return stats;
}

}  // namespace

RowStats ComputeRowStats(const float* row, int32_t n) {
  // One pass over the row (core/row_math.h: SIMD128 with a polynomial log in wasm).
  return n > 0 ? FromSummary(SummarizeRow(row, n), n) : RowStats();
}

const char* RowStatName(RowStatField field) {
  switch (field) {
    case RowStatField::kMax: return "max";
    case RowStatField::kArgmax: return "argmax";
    case RowStatField::kRatioToUniform: return "ratio_to_uniform";
    case RowStatField::kEntropy: return "entropy";
    case RowStatField::kNormalizedEntropy: return "normalized_entropy";
    case RowStatField::kSum: return "sum";
  }
  return "";
}

void PackRowStats(const RowStats& stats, float* out) {
  out[static_cast<int>(RowStatField::kMax)] = stats.max;
  out[static_cast<int>(RowStatField::kArgmax)] = static_cast<float>(stats.argmax);
  out[static_cast<int>(RowStatField::kRatioToUniform)] = stats.ratio_to_uniform;
  out[static_cast<int>(RowStatField::kEntropy)] = stats.entropy;
  out[static_cast<int>(RowStatField::kNormalizedEntropy)] = stats.normalized_entropy;
  out[static_cast<int>(RowStatField::kSum)] = stats.sum;
}

std::vector<RowStats> ComputeRowStats(const Activations& activations, int32_t layer, int32_t head) {
  const int32_t n = activations.tokens;
  std::vector<RowStats> stats(static_cast<size_t>(n));
  // A forward pass leaves its softmax's summaries; activations made any other way are read.
  const bool summarized = activations.row_summaries.size() ==
                          static_cast<size_t>(activations.layers) * activations.heads * n;
  const RowSummary* summaries = summarized ? activations.RowSummaries(layer, head) : nullptr;
  for (int32_t i = 0; i < n; ++i) {
    stats[static_cast<size_t>(i)] = summarized ? FromSummary(summaries[i], n)
                                               : ComputeRowStats(activations.AttentionRow(layer, head, i), n);
  }
  return stats;
}

namespace {

// Layer l's head average into out (n x n floats): its heads lie one after another, summed in
// head order, then divided (plain loops, which the compiler vectorises in wasm, where Eigen's
// expressions run scalar).
void HeadAverageInto(const Activations& activations, int32_t layer, float* out) {
  const size_t nn = static_cast<size_t>(activations.tokens) * activations.tokens;
  if (activations.heads > 0) {
    const float* first = activations.Attention(layer, 0).data();
    std::copy(first, first + nn, out);
  } else {
    std::fill(out, out + nn, 0.0f);
  }
  for (int32_t h = 1; h < activations.heads; ++h) {
    const float* head = activations.Attention(layer, h).data();
    for (size_t k = 0; k < nn; ++k) out[k] += head[k];
  }
  const float heads = static_cast<float>(activations.heads);
  for (size_t k = 0; k < nn; ++k) out[k] /= heads;
}

// A'_l = (1 - r) A_l + r I, each row renormalised, from the head average A_l (n x n floats)
// into mixed (which may be the same array).
void MixLayer(const float* average, Eigen::Index n, float r, float* mixed) {
  for (Eigen::Index i = 0; i < n; ++i) {
    const float* in = average + i * n;
    float* row = mixed + i * n;
    for (Eigen::Index j = 0; j < n; ++j) row[j] = (1.0f - r) * in[j];
    row[i] += r;
    const auto scale = static_cast<float>(1.0 / SumAsDouble(row, static_cast<int32_t>(n)));
    for (Eigen::Index j = 0; j < n; ++j) row[j] *= scale;
  }
}

// R = A'_{L-1} ... A'_0, each A'_l made by mix(l, mixed) into the n x n matrix it is given.
// Float products of row-stochastic matrices stay within about 1e-7 of exact for n <= 512
// (checked against the float64 reference in parity_test), at a quarter of double's cost.
template <typename Mix>
RowMajorMatrix RolloutOf(size_t layers, Eigen::Index n, Mix mix) {
  RowMajorMatrix rollout(n, n), mixed(n, n), product(n, n);
  for (size_t l = 0; l < layers; ++l) {
    mix(l, mixed.data());
    if (l == 0) {  // A'_0 times the identity
      rollout.swap(mixed);
      continue;
    }
    MatMul(mixed, rollout, product);  // core/kernels.h: SIMD128 in wasm, Eigen natively
    rollout.swap(product);
  }
  return rollout;
}

}  // namespace

RowMajorMatrix HeadAverage(const Activations& activations, int32_t layer) {
  RowMajorMatrix average(activations.tokens, activations.tokens);
  HeadAverageInto(activations, layer, average.data());
  return average;
}

RowMajorMatrix RolloutLayer(const Activations& activations, int32_t layer, double residual_weight) {
  RowMajorMatrix mixed(activations.tokens, activations.tokens);
  HeadAverageInto(activations, layer, mixed.data());
  MixLayer(mixed.data(), activations.tokens, static_cast<float>(residual_weight), mixed.data());
  return mixed;
}

RowMajorMatrix Rollout(const std::vector<RowMajorMatrix>& head_averaged, double residual_weight) {
  if (head_averaged.empty()) return RowMajorMatrix();
  const Eigen::Index n = head_averaged[0].rows();
  const auto r = static_cast<float>(residual_weight);
  return RolloutOf(head_averaged.size(), n, [&](size_t l, float* mixed) { MixLayer(head_averaged[l].data(), n, r, mixed); });
}

// The same product, each layer's head average made in place of its A'_l: no L averages held.
RowMajorMatrix Rollout(const Activations& activations, double residual_weight) {
  if (activations.layers <= 0) return RowMajorMatrix();
  const Eigen::Index n = activations.tokens;
  const auto r = static_cast<float>(residual_weight);
  return RolloutOf(static_cast<size_t>(activations.layers), n, [&](size_t l, float* mixed) {
    HeadAverageInto(activations, static_cast<int32_t>(l), mixed);
    MixLayer(mixed, n, r, mixed);
  });
}

std::vector<TokenRole> TokenRoles(const std::vector<Token>& tokens, const Tokenizer& tokenizer) {
  std::vector<TokenRole> roles;
  roles.reserve(tokens.size());
  std::vector<char32_t> code_points;
  for (const Token& token : tokens) {
    TokenRole role = TokenRole::kOrdinary;
    if (token.id == tokenizer.cls_id()) {
      role = TokenRole::kCls;
    } else if (token.id == tokenizer.sep_id()) {
      role = TokenRole::kSep;
    } else {
      code_points.clear();
      unicode::DecodeUtf8(token.text, &code_points);
      bool all_punctuation = !code_points.empty();
      for (char32_t cp : code_points) all_punctuation &= unicode::IsBertPunctuation(cp);
      if (all_punctuation) role = TokenRole::kPunctuation;
    }
    roles.push_back(role);
  }
  return roles;
}

const char* TokenRoleName(TokenRole role) {
  switch (role) {
    case TokenRole::kOrdinary: return "ordinary";
    case TokenRole::kCls: return "cls";
    case TokenRole::kSep: return "sep";
    case TokenRole::kPunctuation: return "punctuation";
  }
  return "ordinary";
}

const char* HeadLabelName(HeadLabel label) {
  switch (label) {
    case HeadLabel::kPreviousToken: return "previous-token";
    case HeadLabel::kNextToken: return "next-token";
    case HeadLabel::kSink: return "[CLS]/[SEP] sink";
    case HeadLabel::kSelf: return "self";
    case HeadLabel::kPunctuation: return "punctuation";
    case HeadLabel::kBroad: return "broad";
    case HeadLabel::kMixed: return "mixed";
  }
  return "mixed";
}

Status HeadProfile::Add(const float* attention, int32_t n, const std::vector<TokenRole>& roles) {
  std::vector<RowStats> stats(n > 0 ? static_cast<size_t>(n) : 0);
  for (int32_t i = 0; i < n; ++i) stats[static_cast<size_t>(i)] = ComputeRowStats(attention + static_cast<size_t>(i) * n, n);
  return AddRows(stats, roles);
}

Status HeadProfile::AddRows(const std::vector<RowStats>& rows_stats, const std::vector<TokenRole>& roles) {
  const int32_t n = static_cast<int32_t>(rows_stats.size());
  if (roles.size() != rows_stats.size()) {
    return Status::Error("head profile: got " + std::to_string(roles.size()) +
                         " token roles for " + std::to_string(n) + " tokens; pass one role per token");
  }
  const auto special = [&](int32_t k) {
    const TokenRole r = roles[static_cast<size_t>(k)];
    return r == TokenRole::kCls || r == TokenRole::kSep;
  };
  for (int32_t i = 0; i < n; ++i) {
    const RowStats& stats = rows_stats[static_cast<size_t>(i)];
    const int32_t j = stats.argmax;
    const TokenRole role = roles[static_cast<size_t>(j)];
    ++rows;
    previous_token += j == i - 1;
    next_token += j == i + 1;
    cls += role == TokenRole::kCls;
    sep += role == TokenRole::kSep;
    self += j == i;
    punctuation += role == TokenRole::kPunctuation;
    entropy_sum += stats.entropy;
    normalized_entropy_sum += stats.normalized_entropy;
    ratio_to_uniform_sum += stats.ratio_to_uniform;

    const bool has_previous = i - 1 >= 0 && !special(i - 1);
    const bool has_next = i + 1 < n && !special(i + 1);
    if (roles[static_cast<size_t>(i)] == TokenRole::kOrdinary) {
      ++word_rows;
      word_rows_with_previous += has_previous;
      word_previous += has_previous && j == i - 1;
      word_rows_with_next += has_next;
      word_next += has_next && j == i + 1;
    }
    if (special(j)) ++target_special;
    else if (j == i) ++target_self;
    else if (j == i - 1) ++target_previous;
    else if (j == i + 1) ++target_next;
    else if (role == TokenRole::kPunctuation) ++target_punctuation;
    else ++target_other;
  }
  return Status::Ok();
}

void HeadProfile::Merge(const HeadProfile& o) {
  rows += o.rows;
  previous_token += o.previous_token;
  next_token += o.next_token;
  cls += o.cls;
  sep += o.sep;
  self += o.self;
  punctuation += o.punctuation;
  entropy_sum += o.entropy_sum;
  normalized_entropy_sum += o.normalized_entropy_sum;
  ratio_to_uniform_sum += o.ratio_to_uniform_sum;
  word_rows += o.word_rows;
  word_rows_with_previous += o.word_rows_with_previous;
  word_previous += o.word_previous;
  word_rows_with_next += o.word_rows_with_next;
  word_next += o.word_next;
  target_special += o.target_special;
  target_self += o.target_self;
  target_previous += o.target_previous;
  target_next += o.target_next;
  target_punctuation += o.target_punctuation;
  target_other += o.target_other;
}

std::vector<std::pair<const char*, int64_t>> HeadProfileCounts(const HeadProfile& p) {
  return {
      {"rows", p.rows}, {"previous_token", p.previous_token}, {"next_token", p.next_token}, {"cls", p.cls},
      {"sep", p.sep}, {"self", p.self}, {"punctuation", p.punctuation}, {"word_rows", p.word_rows},
      {"word_rows_with_previous", p.word_rows_with_previous}, {"word_previous", p.word_previous},
      {"word_rows_with_next", p.word_rows_with_next}, {"word_next", p.word_next},
      {"target_special", p.target_special}, {"target_self", p.target_self},
      {"target_previous", p.target_previous}, {"target_next", p.target_next},
      {"target_punctuation", p.target_punctuation}, {"target_other", p.target_other},
  };
}

std::vector<std::pair<const char*, double>> HeadProfileFractions(const HeadProfile& p) {
  return {
      {"previous_token", p.Fraction(p.previous_token)}, {"next_token", p.Fraction(p.next_token)},
      {"cls", p.Fraction(p.cls)}, {"sep", p.Fraction(p.sep)}, {"self", p.Fraction(p.self)},
      {"punctuation", p.Fraction(p.punctuation)}, {"mean_entropy", p.mean_entropy()},
      {"mean_normalized_entropy", p.mean_normalized_entropy()},
      {"mean_ratio_to_uniform", p.mean_ratio_to_uniform()},
  };
}

HeadLabel HeadProfile::Label() const {
  if (rows == 0) return HeadLabel::kMixed;
  if (mean_normalized_entropy() >= kBroadEntropy) return HeadLabel::kBroad;
  const struct {
    HeadLabel label;
    int64_t count;
  } candidates[] = {
      {HeadLabel::kPreviousToken, previous_token}, {HeadLabel::kNextToken, next_token},
      {HeadLabel::kSink, cls + sep},               {HeadLabel::kSelf, self},
      {HeadLabel::kPunctuation, punctuation},
  };
  const auto* best = &candidates[0];
  for (const auto& candidate : candidates) {
    if (candidate.count > best->count) best = &candidate;
  }
  return Fraction(best->count) >= kLabelFraction ? best->label : HeadLabel::kMixed;
}

Status AccumulateHeadProfiles(const Activations& activations, const std::vector<TokenRole>& roles,
                              std::vector<HeadProfile>* profiles) {
  const size_t count = static_cast<size_t>(activations.layers) * activations.heads;
  if (profiles->empty()) profiles->resize(count);
  if (profiles->size() != count) {
    return Status::Error("head profiles: got " + std::to_string(profiles->size()) +
                         " profiles, expected " + std::to_string(count) +
                         " (layers x heads); aggregate only over one model's sentences");
  }
  for (int32_t l = 0; l < activations.layers; ++l) {
    for (int32_t h = 0; h < activations.heads; ++h) {
      Status status = (*profiles)[static_cast<size_t>(l) * activations.heads + h].AddRows(
          ComputeRowStats(activations, l, h), roles);
      if (!status.ok()) return status;
    }
  }
  return Status::Ok();
}

Status LoadedModel::FromModel(std::unique_ptr<Model> model, std::unique_ptr<LoadedModel>* out) {
  Vocab vocab;
  Status status = Vocab::FromText(model->vocab_text(), &vocab);
  if (!status.ok()) return status;
  std::unique_ptr<LoadedModel> loaded(new LoadedModel());
  status = Tokenizer::Create(std::move(vocab), &loaded->tokenizer_, model->tokenizer_options());
  if (!status.ok()) return status;
  loaded->model_ = std::move(model);
  // A model whose longest sentence could not be analysed is refused now, not on the reader's
  // first long sentence.
  const uint64_t floats = Encoder::ActivationFloats(loaded->model_->config(), loaded->MaxLength(0));
  if (floats > MemoryBudget::kMaxActivationFloats) {
    return Status::Error("a sentence of " + std::to_string(loaded->MaxLength(0)) +
                         " tokens needs " + CountString(floats) +
                         " activation values in this model, more than this build allows (" +
                         CountString(MemoryBudget::kMaxActivationFloats) +
                         "); the model is too large for this engine");
  }
  loaded->encoder_ = std::make_unique<Encoder>(*loaded->model_);
  *out = std::move(loaded);
  return Status::Ok();
}

Status LoadedModel::FromBuffer(const uint8_t* data, size_t size, std::unique_ptr<LoadedModel>* out) {
  std::unique_ptr<Model> model;
  Status status = Model::FromBuffer(data, size, &model);
  return status.ok() ? FromModel(std::move(model), out) : status;
}

Status LoadedModel::FromFile(const std::string& path, std::unique_ptr<LoadedModel>* out) {
  std::unique_ptr<Model> model;
  Status status = Model::FromFile(path, &model);
  return status.ok() ? FromModel(std::move(model), out) : status;
}

int32_t LoadedModel::MaxLength(int32_t requested) const {
  const int32_t limit = static_cast<int32_t>(std::min<uint32_t>(
      model_->config().max_position_embeddings, static_cast<uint32_t>(Tokenizer::kDefaultMaxLength)));
  return requested <= 0 || requested > limit ? limit : requested;
}

std::vector<int32_t> LoadedModel::MissingShards(std::string_view text, int32_t max_length) const {
  if (!model_->sharded()) return {};
  return MissingShards(tokenizer_.Encode(text, MaxLength(max_length)));
}

std::vector<int32_t> LoadedModel::MissingShards(const Encoding& encoding) const {
  std::vector<int32_t> missing;
  if (!model_->sharded()) return missing;
  for (const Token& token : encoding.tokens) {
    if (!model_->RowLoaded(token.id)) missing.push_back(model_->ShardOfRow(token.id));
  }
  std::sort(missing.begin(), missing.end());
  missing.erase(std::unique(missing.begin(), missing.end()), missing.end());
  return missing;
}

Status LoadedModel::TopPredictions(const SentenceAnalysis& analysis, int32_t position, int32_t k,
                                   std::vector<Prediction>* out) const {
  std::vector<float> logits;
  Status status = encoder_->MaskedLmLogits(analysis.activations, position, &logits);
  if (!status.ok()) return status;
  std::vector<int32_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  k = std::max(1, std::min<int32_t>(k, static_cast<int32_t>(order.size())));
  std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int32_t a, int32_t b) {
    return logits[static_cast<size_t>(a)] > logits[static_cast<size_t>(b)];
  });
  // The softmax's normaliser in double, shifted by the largest logit.
  const double max_logit = logits[static_cast<size_t>(order[0])];
  double total = 0;
  for (float z : logits) total += std::exp(static_cast<double>(z) - max_logit);
  out->clear();
  for (int32_t i = 0; i < k; ++i) {
    const int32_t id = order[static_cast<size_t>(i)];
    out->push_back({id, tokenizer_.vocab().piece(id),
                    std::exp(static_cast<double>(logits[static_cast<size_t>(id)]) - max_logit) / total});
  }
  return Status::Ok();
}

namespace {

// Entry id's softmax probability (in double, shifted by the largest logit), its rank and the
// first most probable entry, from one position's logits over the vocabulary (V).
LoadedModel::EntryProbability FromLogits(const float* logits, size_t V, int32_t id) {
  LoadedModel::EntryProbability out;
  const float target = logits[static_cast<size_t>(id)];
  const float* best = std::max_element(logits, logits + V);
  const double max_logit = *best;
  double total = 0;
  int32_t larger = 0;
  for (size_t v = 0; v < V; ++v) {
    total += std::exp(static_cast<double>(logits[v]) - max_logit);
    larger += logits[v] > target;
  }
  out.probability = std::exp(static_cast<double>(target) - max_logit) / total;
  out.log_probability = (static_cast<double>(target) - max_logit) - std::log(total);
  out.rank = larger + 1;
  out.top1 = static_cast<int32_t>(best - logits);
  return out;
}

Status CheckEntry(int32_t id, size_t V) {
  if (id < 0 || static_cast<size_t>(id) >= V) {
    return Status::Error("entry " + std::to_string(id) + " is not in the vocabulary of " +
                         std::to_string(V) + " entries");
  }
  return Status::Ok();
}

}  // namespace

Status LoadedModel::ProbabilityOf(const SentenceAnalysis& analysis, int32_t position, int32_t id,
                                  EntryProbability* out) const {
  std::vector<float> logits;
  Status status = encoder_->MaskedLmLogits(analysis.activations, position, &logits);
  if (status.ok()) status = CheckEntry(id, logits.size());
  if (!status.ok()) return status;
  *out = FromLogits(logits.data(), logits.size(), id);
  return Status::Ok();
}

Status LoadedModel::ProbabilitiesOf(const std::vector<const Activations*>& passes, int32_t position,
                                    int32_t id, std::vector<EntryProbability>* out) const {
  RowMajorMatrix logits;
  Status status = encoder_->MaskedLmLogitsBatch(passes, std::vector<int32_t>(passes.size(), position), &logits);
  const size_t V = static_cast<size_t>(logits.cols());
  if (status.ok()) status = CheckEntry(id, V);
  if (!status.ok()) return status;
  out->clear();
  for (Eigen::Index r = 0; r < logits.rows(); ++r) out->push_back(FromLogits(logits.row(r).data(), V, id));
  return Status::Ok();
}

Status ParseHeadList(std::string_view spec, const ModelConfig& config, std::vector<uint8_t>* flags) {
  const uint32_t L = config.num_hidden_layers, H = config.num_attention_heads;
  flags->assign(spec.empty() ? 0 : size_t{L} * H, 0);
  const std::string accepted = "give heads as L.H[,L.H...] with L in 1.." + std::to_string(L) +
                               " and H in 1.." + std::to_string(H) + ", e.g. 2.3 or 1.1,4.2";
  size_t start = 0;
  while (start < spec.size()) {
    size_t end = spec.find(',', start);
    if (end == std::string_view::npos) end = spec.size();
    const std::string item(spec.substr(start, end - start));
    unsigned long layer = 0, head = 0;
    size_t dot = item.find('.');
    bool ok = dot != std::string::npos && dot > 0 && dot + 1 < item.size() &&
              item.find_first_not_of("0123456789.") == std::string::npos &&
              item.find('.', dot + 1) == std::string::npos && item.size() <= 12;
    if (ok) {
      layer = std::stoul(item.substr(0, dot));
      head = std::stoul(item.substr(dot + 1));
      ok = layer >= 1 && layer <= L && head >= 1 && head <= H;
    }
    if (!ok) return Status::Error("cannot read head '" + item + "': " + accepted);
    (*flags)[(layer - 1) * H + (head - 1)] = 1;
    start = end + 1;
  }
  if (!spec.empty() && spec.back() == ',') return Status::Error("cannot read a head after the last ',': " + accepted);
  return Status::Ok();
}

Status AnalyzeText(LoadedModel& model, std::string_view text, const AnalysisOptions& options,
                   SentenceAnalysis* out) {
  return AnalyzeEncoding(model, model.tokenizer().Encode(text, model.MaxLength(options.max_length)), options, out);
}

Status AnalyzeEncoding(LoadedModel& model, Encoding encoding, const AnalysisOptions& options,
                       SentenceAnalysis* out) {
  if (!(options.residual_weight >= 0.0 && options.residual_weight <= 1.0)) {
    return Status::Error("the rollout residual weight must be in [0, 1], got " +
                         std::to_string(options.residual_weight));
  }
  const Tokenizer& tokenizer = model.tokenizer();
  out->outputs = options.outputs;
  out->encoding = std::move(encoding);
  const std::vector<Token>& tokens = out->encoding.tokens;
  const int32_t n = static_cast<int32_t>(tokens.size());

  std::vector<int32_t> ids(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) ids[i] = tokens[i].id;
  for (int32_t p : options.masked_positions) {
    if (p <= 0 || p >= n - 1) {
      return Status::Error("cannot mask position " + std::to_string(p) + ": " +
                           (n > 2 ? "the text's tokens are at 1 to " + std::to_string(n - 2)
                                  : std::string("the text has no tokens")) +
                           " ([CLS] and [SEP] cannot be masked)");
    }
    ids[static_cast<size_t>(p)] = tokenizer.mask_id();
  }
  ForwardOptions forward;
  forward.removed_heads = options.removed_heads;
  forward.value_norms = (options.outputs & kOutputValueNorms) != 0;
  forward.values = (options.outputs & kOutputValues) != 0;
  forward.last_layer_attention_only = (options.outputs & kOutputHiddenStates) == 0;
  Status status = model.encoder().Forward(ids, &out->activations, forward);
  if (!status.ok()) return status;
  const Activations& a = out->activations;

  out->roles = TokenRoles(tokens, tokenizer);
  if (options.outputs & kOutputRollout) {
    out->rollout = Rollout(a, options.residual_weight);
  } else {
    out->rollout.resize(0, 0);
  }

  // Each row's statistics are computed once, for the packed array and the head profiles.
  const bool want_stats = (options.outputs & kOutputRowStats) != 0;
  const bool want_profiles = (options.outputs & kOutputHeadProfiles) != 0;
  out->row_stats.assign(want_stats ? static_cast<size_t>(a.layers) * a.heads * n * kRowStatFields : 0, 0.0f);
  out->head_profiles.assign(want_profiles ? static_cast<size_t>(a.layers) * a.heads : 0, HeadProfile());
  if (want_stats || want_profiles) {
    float* packed = out->row_stats.data();
    for (int32_t l = 0; l < a.layers; ++l) {
      for (int32_t h = 0; h < a.heads; ++h) {
        const std::vector<RowStats> rows = ComputeRowStats(a, l, h);
        if (want_stats) {
          for (const RowStats& stats : rows) {
            PackRowStats(stats, packed);
            packed += kRowStatFields;
          }
        }
        if (want_profiles) {
          status = out->head_profiles[static_cast<size_t>(l) * a.heads + h].AddRows(rows, out->roles);
          if (!status.ok()) return status;
        }
      }
    }
  }
  return Status::Ok();
}

}  // namespace attn
