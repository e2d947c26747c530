// Row statistics, head average, rollout and head profiles (see analysis.h for the rules).
#include "core/analysis.h"

#include <cmath>
#include <limits>
#include <string>

#include <Eigen/Core>

#include "core/unicode.h"

namespace attn {

RowStats ComputeRowStats(const float* row, int32_t n) {
  RowStats stats;
  if (n <= 0) return stats;
  const Eigen::Map<const Eigen::ArrayXf> p(row, n);  // (n)
  Eigen::Index argmax = 0;
  stats.max = p.maxCoeff(&argmax);
  stats.argmax = static_cast<int32_t>(argmax);
  // The sum in double, so that it shows the row's own deviation from 1, not this sum's.
  stats.sum = static_cast<float>(p.cast<double>().sum());
  stats.ratio_to_uniform = stats.max * static_cast<float>(n);
  // 0 log 0 = 0: clamping p to the smallest normal float keeps log finite and the product 0.
  stats.entropy = -(p * p.max(std::numeric_limits<float>::min()).log()).sum();
  stats.normalized_entropy =
      n > 1 ? static_cast<float>(stats.entropy / std::log(static_cast<double>(n))) : 0.0f;
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
  RowMajorMatrix sum = RowMajorMatrix::Zero(n, n);
  for (int32_t h = 0; h < activations.heads; ++h) sum += activations.Attention(layer, h);
  return sum / static_cast<float>(activations.heads);
}

RowMajorMatrix Rollout(const std::vector<RowMajorMatrix>& head_averaged, double residual_weight) {
  if (head_averaged.empty()) return RowMajorMatrix();
  const Eigen::Index n = head_averaged[0].rows();
  const auto r = static_cast<float>(residual_weight);
  // Float products of row-stochastic matrices stay within about 1e-7 of exact for n <= 512
  // (checked against the float64 reference in parity_test), at a quarter of double's cost.
  RowMajorMatrix rollout = RowMajorMatrix::Identity(n, n);
  RowMajorMatrix mixed(n, n), product(n, n);
  for (const RowMajorMatrix& attention : head_averaged) {
    mixed = (1.0f - r) * attention;
    mixed.diagonal().array() += r;
    for (Eigen::Index i = 0; i < n; ++i) {
      mixed.row(i) *= static_cast<float>(1.0 / mixed.row(i).cast<double>().sum());
    }
    product.noalias() = mixed * rollout;
    rollout.swap(product);
  }
  return rollout;
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
