// Row statistics, head average, rollout and head profiles (see analysis.h for the rules).
#include "core/analysis.h"

#include <cmath>
#include <string>

#include "core/unicode.h"

namespace attn {

RowStats ComputeRowStats(const float* row, int32_t n) {
  RowStats stats;
  if (n <= 0) return stats;
  double sum = 0, entropy = 0;
  stats.max = row[0];
  for (int32_t j = 0; j < n; ++j) {
    const double p = row[j];
    sum += p;
    if (p > 0) entropy -= p * std::log(p);
    if (row[j] > stats.max) {
      stats.max = row[j];
      stats.argmax = j;
    }
  }
  stats.sum = static_cast<float>(sum);
  stats.ratio_to_uniform = stats.max * static_cast<float>(n);
  stats.entropy = static_cast<float>(entropy);
  stats.normalized_entropy = n > 1 ? static_cast<float>(entropy / std::log(static_cast<double>(n))) : 0.0f;
  return stats;
}

std::vector<RowStats> ComputeRowStats(const Activations& activations, int32_t layer, int32_t head) {
  std::vector<RowStats> stats(static_cast<size_t>(activations.tokens));
  for (int32_t i = 0; i < activations.tokens; ++i) {
    stats[static_cast<size_t>(i)] =
        ComputeRowStats(activations.AttentionRow(layer, head, i), activations.tokens);
  }
  return stats;
}

RowMajorMatrix HeadAverage(const Activations& activations, int32_t layer) {
  const int32_t n = activations.tokens;
  Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> sum =
      Eigen::MatrixXd::Zero(n, n);
  for (int32_t h = 0; h < activations.heads; ++h) sum += activations.Attention(layer, h).cast<double>();
  return (sum / activations.heads).cast<float>();
}

RowMajorMatrix Rollout(const std::vector<RowMajorMatrix>& head_averaged, double residual_weight) {
  using MatrixD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  if (head_averaged.empty()) return RowMajorMatrix();
  const Eigen::Index n = head_averaged[0].rows();
  MatrixD rollout = MatrixD::Identity(n, n);
  for (const RowMajorMatrix& attention : head_averaged) {
    MatrixD mixed = residual_weight * MatrixD::Identity(n, n) +
                    (1.0 - residual_weight) * attention.cast<double>();
    for (Eigen::Index i = 0; i < n; ++i) mixed.row(i) /= mixed.row(i).sum();
    rollout = (mixed * rollout).eval();
  }
  return rollout.cast<float>();
}

RowMajorMatrix Rollout(const Activations& activations, double residual_weight) {
  std::vector<RowMajorMatrix> head_averaged;
  head_averaged.reserve(static_cast<size_t>(activations.layers));
  for (int32_t l = 0; l < activations.layers; ++l) head_averaged.push_back(HeadAverage(activations, l));
  return Rollout(head_averaged, residual_weight);
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
  if (n < 0 || roles.size() != static_cast<size_t>(n)) {
    return Status::Error("head profile: got " + std::to_string(roles.size()) +
                         " token roles for " + std::to_string(n) + " tokens; pass one role per token");
  }
  for (int32_t i = 0; i < n; ++i) {
    const RowStats stats = ComputeRowStats(attention + static_cast<size_t>(i) * n, n);
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
  }
  return Status::Ok();
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
      Status status = (*profiles)[static_cast<size_t>(l) * activations.heads + h].Add(
          activations.Attention(l, h).data(), activations.tokens, roles);
      if (!status.ok()) return status;
    }
  }
  return Status::Ok();
}

}  // namespace attn
