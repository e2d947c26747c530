// The lenses (core/lenses.h) on hand-made cases and on a random tiny model: each against a
// computation written out here. Parity with the independent float64 implementation over every
// key is tests/py/test_lenses.py's job.
#include "core/lenses.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "test_model_writer.h"

namespace attn {
namespace {

TEST(MaxFlowTest, ThreeTokensTwoLayersByHand) {
  // Source (0, 0) feeds layer 1's three tokens with 0.5, 0.3, 0.2; they feed output (2, 0) with
  // 0.1, 0.6, 0.3. Every path goes through one middle token, so the flow is
  // min(0.5, 0.1) + min(0.3, 0.6) + min(0.2, 0.3) = 0.6. Nodes: layer 0 at 0..2, layer 1 at
  // 3..5, the output at 6; layer 0's other tokens have edges too, but no flow reaches them.
  const double in[3] = {0.5, 0.3, 0.2}, out[3] = {0.1, 0.6, 0.3};
  std::vector<FlowEdge> edges;
  for (int k = 0; k < 3; ++k) {
    edges.push_back({0, 3 + k, in[k]});
    edges.push_back({1, 3 + k, 0.9});
    edges.push_back({2, 3 + k, 0.9});
    edges.push_back({3 + k, 6, out[k]});
  }
  EXPECT_NEAR(MaxFlow(7, edges, 0, 6), 0.6, 1e-12);
  // From (0, 1): min(0.9, out) each, all of out.
  EXPECT_NEAR(MaxFlow(7, edges, 1, 6), 1.0, 1e-12);
}

TEST(MaxFlowTest, NeedsTheReverseEdges) {
  // The textbook network (Cormen et al., Figure 26.1): maximum flow 23, reached only by
  // cancelling flow along a reverse edge.
  const std::vector<FlowEdge> edges = {{0, 1, 16}, {0, 2, 13}, {2, 1, 4},  {1, 3, 12}, {3, 2, 9},
                                       {2, 4, 14}, {4, 3, 7},  {3, 5, 20}, {4, 5, 4}};
  EXPECT_NEAR(MaxFlow(6, edges, 0, 5), 23.0, 1e-9);
  EXPECT_EQ(MaxFlow(6, edges, 5, 0), 0.0);
  EXPECT_EQ(MaxFlow(6, edges, 0, 0), 0.0);
}

TEST(SpearmanTest, HandWorkedWithTies) {
  // No ties: 1 - 6 sum d^2 / (n (n^2 - 1)) = 1 - 6 * 2 / 60.
  EXPECT_NEAR(SpearmanRho({1, 2, 3, 4}, {1, 3, 2, 4}), 0.8, 1e-12);
  // x's first two values tie (ranks 1.5, 1.5, 3, 4, mean 2.5): the Pearson correlation of the
  // ranks with 1..4 is 4.5 / sqrt(4.5 * 5).
  EXPECT_NEAR(SpearmanRho({1, 1, 2, 3}, {1, 2, 3, 4}), 4.5 / std::sqrt(4.5 * 5.0), 1e-12);
  // Values within the tie tolerance tie; further apart they do not.
  EXPECT_NEAR(SpearmanRho({1, 1 + 1e-10, 2, 3}, {1, 2, 3, 4}), 4.5 / std::sqrt(4.5 * 5.0), 1e-12);
  EXPECT_NEAR(SpearmanRho({1, 1 + 1e-6, 2, 3}, {1, 2, 3, 4}), 1.0, 1e-12);
  EXPECT_NEAR(SpearmanRho({4, 3, 2, 1}, {1, 2, 3, 4}), -1.0, 1e-12);
  EXPECT_TRUE(std::isnan(SpearmanRho({1, 2}, {1, 2})));
  EXPECT_TRUE(std::isnan(SpearmanRho({5, 5, 5}, {1, 2, 3})));
}

class LensesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::vector<uint8_t> bytes =
        testing::Serialize(testing::RandomModel(testing::TinyConfig(), 11, false, true));
    ASSERT_TRUE(LoadedModel::FromBuffer(bytes.data(), bytes.size(), &model_).ok());
    AnalysisOptions options;
    options.outputs = kOutputValues | kOutputValueNorms;
    ASSERT_TRUE(AnalyzeText(*model_, text_, options, &analysis_).ok());
  }
  const std::string text_ = "the cat sat on the mat, a dog ran.";
  std::unique_ptr<LoadedModel> model_;
  SentenceAnalysis analysis_;
};

TEST_F(LensesTest, MixingVectorsAndTheBiasRebuildTheLayerNormOutput) {
  const Activations& a = analysis_.activations;
  const Weights& w = model_->model().weights();
  const int32_t n = a.tokens, d = a.hidden;
  double worst = 0;
  for (int32_t l = 0; l < a.layers; ++l) {
    const LayerWeights& lw = w.layers[static_cast<size_t>(l)];
    for (int32_t i = 0; i < n; ++i) {
      AttentionBlockParts parts;
      ASSERT_TRUE(DecomposeAttentionBlock(model_->model(), a, l, i, &parts).ok());
      // z_i by hand: LayerNorm(x_i + context_i W_O^T + b_O), in double.
      std::vector<double> y(static_cast<size_t>(d));
      double mean = 0;
      for (int32_t r = 0; r < d; ++r) {
        double sum = double{a.HiddenState(l)(i, r)} + lw.attention_output_bias(r);
        for (int32_t c = 0; c < d; ++c) {
          sum += double{lw.attention_output_weight(r, c)} * a.contexts[(static_cast<size_t>(l) * n + i) * d + c];
        }
        y[static_cast<size_t>(r)] = sum;
        mean += sum / d;
      }
      double variance = 0;
      for (double v : y) variance += (v - mean) * (v - mean) / d;
      const double s = std::sqrt(variance + double{model_->model().config().layer_norm_eps});
      for (int32_t r = 0; r < d; ++r) {
        const double z = (y[static_cast<size_t>(r)] - mean) / s * lw.attention_output_norm_weight(r) +
                         lw.attention_output_norm_bias(r);
        const double rebuilt = parts.parts.col(r).sum() + parts.bias(r);
        worst = std::max(worst, std::fabs(rebuilt - z));
      }
    }
  }
  constexpr double kTolerance = 1e-5;
  std::printf("sum_j T_i(x_j) + bias against LayerNorm(y_i): max |diff| %.3g (tol %.0e)\n", worst, kTolerance);
  EXPECT_LE(worst, kTolerance);
}

TEST_F(LensesTest, NormsRatiosAndRowSums) {
  LensOptions options;
  options.flow_rows = {1, 3};
  Lenses lenses;
  ASSERT_TRUE(ComputeLenses(*model_, analysis_, options, &lenses).ok());
  const Activations& a = analysis_.activations;
  const int32_t L = a.layers, H = a.heads, n = a.tokens;
  const size_t nn = static_cast<size_t>(n) * n;
  double worst_weighted = 0, worst_alti_sum = 0, worst_ratio = 0, worst_mixing = 0;
  for (int32_t l = 0; l < L; ++l) {
    for (int32_t h = 0; h < H; ++h) {
      for (int32_t i = 0; i < n; ++i) {
        for (int32_t j = 0; j < n; ++j) {
          // alpha_ij ||W_O^h v_j||, the value norms the forward pass reports.
          const double want = double{a.Attention(l, h)(i, j)} * a.value_norms[(static_cast<size_t>(l) * H + h) * n + j];
          worst_weighted = std::max(worst_weighted, std::fabs(want - lenses.weighted[((static_cast<size_t>(l) * H + h) * n + i) * n + j]));
        }
      }
    }
    for (int32_t i = 0; i < n; ++i) {
      AttentionBlockParts parts;
      ASSERT_TRUE(DecomposeAttentionBlock(model_->model(), a, l, i, &parts).ok());
      double alti = 0, total = 0;
      for (int32_t j = 0; j < n; ++j) {
        const float m = lenses.mixing[l * nn + static_cast<size_t>(i) * n + j];
        worst_mixing = std::max(worst_mixing, std::fabs(m - parts.parts.row(j).norm()));
        alti += lenses.alti[l * nn + static_cast<size_t>(i) * n + j];
        total += m;
      }
      worst_alti_sum = std::max(worst_alti_sum, std::fabs(alti - 1.0));
      const double ratio = (total - lenses.mixing[l * nn + static_cast<size_t>(i) * n + i]) / total;
      worst_ratio = std::max(worst_ratio, std::fabs(ratio - lenses.mixing_ratio[static_cast<size_t>(l) * n + i]));
    }
  }
  std::printf("weighted %.3g, mixing %.3g, mixing ratio %.3g, |ALTI row sum - 1| %.3g\n", worst_weighted,
              worst_mixing, worst_ratio, worst_alti_sum);
  EXPECT_LE(worst_weighted, 1e-5);
  EXPECT_LE(worst_mixing, 1e-5);
  EXPECT_LE(worst_ratio, 1e-6);
  EXPECT_LE(worst_alti_sum, 1e-5);
  // Rows not asked for are NaN; those asked for sum (normalised) to 1 and equal MaxFlow on the
  // same graph built here from RolloutLayer.
  for (int32_t i = 0; i < n; ++i) {
    const bool asked = i == 1 || i == 3;
    EXPECT_EQ(std::isnan(lenses.flow[static_cast<size_t>(i) * n]), !asked) << "row " << i;
  }
  std::vector<FlowEdge> edges;
  for (int32_t l = 0; l < L; ++l) {
    const RowMajorMatrix m = RolloutLayer(a, l);
    for (int32_t from = 0; from < n; ++from) {
      for (int32_t to = 0; to < n; ++to) {
        // Nodes: layer l's tokens at l n + k; the output tokens at L n + k.
        edges.push_back({l * n + from, (l + 1) * n + to, m(to, from)});
      }
    }
  }
  double sum = 0;
  for (int32_t j = 0; j < n; ++j) {
    const double want = MaxFlow((L + 1) * n, edges, j, L * n + 3);
    EXPECT_NEAR(lenses.flow[3 * static_cast<size_t>(n) + j], want, 1e-6) << "flow[3][" << j << "]";
    sum += lenses.flow_normalized[3 * static_cast<size_t>(n) + j];
  }
  EXPECT_NEAR(sum, 1.0, 1e-5);
  // ALTI rollout's rows sum to 1 as products of rows that do.
  for (int32_t i = 0; i < n; ++i) {
    double row = 0;
    for (int32_t j = 0; j < n; ++j) row += lenses.alti_rollout[static_cast<size_t>(i) * n + j];
    EXPECT_NEAR(row, 1.0, 1e-5);
  }
  EXPECT_TRUE(lenses.value_zeroing.empty());
  EXPECT_TRUE(lenses.occlusion.empty());
}

TEST_F(LensesTest, OneRowIsThatRowOfTheWhole) {
  LensOptions options;
  Lenses all, one;
  ASSERT_TRUE(ComputeLenses(*model_, analysis_, options, &all).ok());
  options.rows = {2};
  ASSERT_TRUE(ComputeLenses(*model_, analysis_, options, &one).ok());
  const int32_t n = all.tokens;
  for (int32_t l = 0; l < all.layers; ++l) {
    for (int32_t i = 0; i < n; ++i) {
      const size_t at = (static_cast<size_t>(l) * n + i) * n;
      for (int32_t j = 0; j < n; ++j) {
        if (i == 2) {
          EXPECT_EQ(one.alti[at + j], all.alti[at + j]);
          EXPECT_EQ(one.mixing[at + j], all.mixing[at + j]);
          EXPECT_EQ(one.weighted_layer[at + j], all.weighted_layer[at + j]);
        } else {
          EXPECT_TRUE(std::isnan(one.alti[at + j]));
        }
      }
      EXPECT_EQ(std::isnan(one.mixing_ratio[static_cast<size_t>(l) * n + i]), i != 2);
    }
  }
  EXPECT_EQ(one.weighted, all.weighted);
  EXPECT_TRUE(one.alti_rollout.empty());
  options.rows = {n};
  EXPECT_FALSE(ComputeLenses(*model_, analysis_, options, &one).ok());
}

TEST_F(LensesTest, ValueZeroingOfATokenNoOneAttendsToIsZero) {
  // Take token 4's weight away in every head of every layer, rows renormalised: zeroing its
  // value vectors then changes no context, and so no output.
  SentenceAnalysis analysis = analysis_;
  Activations& a = analysis.activations;
  const int32_t n = a.tokens, nobody = 4;
  for (int32_t l = 0; l < a.layers; ++l) {
    for (int32_t h = 0; h < a.heads; ++h) {
      float* p = a.attention_probs.data() + ((static_cast<size_t>(l) * a.heads + h) * n) * n;
      for (int32_t i = 0; i < n; ++i) p[static_cast<size_t>(i) * n + nobody] = 0.0f;
    }
  }
  LensOptions options;
  options.weighted = options.mixing = false;
  options.value_zeroing_rows = LensOptions::AllRows(n);
  Lenses lenses;
  ASSERT_TRUE(ComputeLenses(*model_, analysis, options, &lenses).ok());
  double worst = 0, largest = 0;
  for (int32_t l = 0; l < a.layers; ++l) {
    for (int32_t i = 0; i < n; ++i) {
      double sum = 0;
      for (int32_t j = 0; j < n; ++j) {
        const float v = lenses.value_zeroing[(static_cast<size_t>(l) * n + i) * n + j];
        sum += v;
        if (j == nobody) worst = std::max(worst, double{v});
        else largest = std::max(largest, double{v});
      }
      EXPECT_NEAR(sum, 1.0, 1e-5);
    }
  }
  std::printf("value zeroing of the unattended token: largest %.3g (others up to %.3g)\n", worst, largest);
  EXPECT_LE(worst, 1e-9);
  EXPECT_GT(largest, 0.05);
}

TEST_F(LensesTest, OcclusionIsTheDropWhenATokenIsMasked) {
  AnalysisOptions options;
  options.outputs = kOutputValues;
  options.masked_positions = {3};
  SentenceAnalysis analysis;
  ASSERT_TRUE(AnalyzeText(*model_, text_, options, &analysis).ok());
  LensOptions lens_options;
  lens_options.target = 3;
  Lenses lenses;
  ASSERT_TRUE(ComputeLenses(*model_, analysis, lens_options, &lenses).ok());
  const int32_t n = analysis.tokens();
  LoadedModel::EntryProbability base;
  ASSERT_TRUE(model_->ProbabilityOf(analysis, 3, 0, &base).ok());
  EXPECT_EQ(lenses.target_top1, base.top1);
  LoadedModel::EntryProbability top;
  ASSERT_TRUE(model_->ProbabilityOf(analysis, 3, base.top1, &top).ok());
  EXPECT_NEAR(lenses.target_logprob, std::log(top.probability), 1e-9);
  int defined = 0;
  for (int32_t j = 0; j < n; ++j) {
    const double v = lenses.occlusion[static_cast<size_t>(j)];
    if (j == 0 || j == 3 || j == n - 1) {
      EXPECT_TRUE(std::isnan(v)) << j;
      continue;
    }
    // The same drop through the analysis path: mask j beside the target.
    options.masked_positions = {3, j};
    SentenceAnalysis occluded;
    ASSERT_TRUE(AnalyzeText(*model_, text_, options, &occluded).ok());
    LoadedModel::EntryProbability p;
    ASSERT_TRUE(model_->ProbabilityOf(occluded, 3, lenses.target_top1, &p).ok());
    EXPECT_NEAR(v, lenses.target_logprob - std::log(p.probability), 1e-4) << "occlusion[" << j << "]";
    ++defined;
  }
  EXPECT_EQ(defined, n - 3);
  for (int k = 0; k < kFaithfulnessLenses; ++k) {
    const double rho = lenses.faithfulness[k];
    EXPECT_TRUE(rho >= -1.0 && rho <= 1.0) << FaithfulnessLensName(static_cast<FaithfulnessLens>(k));
  }
  // The faithfulness of flow is Spearman's rho of occlusion against flow's row 3.
  std::vector<double> effect, flow;
  for (int32_t j = 1; j + 1 < n; ++j) {
    if (j == 3) continue;
    effect.push_back(lenses.occlusion[static_cast<size_t>(j)]);
    flow.push_back(lenses.flow[3 * static_cast<size_t>(n) + j]);
  }
  EXPECT_DOUBLE_EQ(lenses.faithfulness[static_cast<int>(FaithfulnessLens::kFlow)], SpearmanRho(effect, flow));
}

TEST_F(LensesTest, RefusesWhatItCannotRead) {
  Lenses lenses;
  LensOptions options;
  SentenceAnalysis plain;
  ASSERT_TRUE(AnalyzeText(*model_, text_, AnalysisOptions(), &plain).ok());
  Status status = ComputeLenses(*model_, plain, options, &lenses);
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("value vectors"), std::string::npos) << status.message();
  options.flow_rows = {analysis_.tokens()};
  status = ComputeLenses(*model_, analysis_, options, &lenses);
  EXPECT_NE(status.message().find("outside the sentence"), std::string::npos) << status.message();
  options.flow_rows.clear();
  options.target = -2;
  EXPECT_FALSE(ComputeLenses(*model_, analysis_, options, &lenses).ok());
  options.target = -1;
  AnalysisOptions ablated;
  ablated.outputs = kOutputValues;
  ASSERT_TRUE(ParseHeadList("1.2", model_->model().config(), &ablated.removed_heads).ok());
  SentenceAnalysis removed;
  ASSERT_TRUE(AnalyzeText(*model_, text_, ablated, &removed).ok());
  status = ComputeLenses(*model_, removed, options, &lenses);
  EXPECT_NE(status.message().find("heads removed"), std::string::npos) << status.message();
}

}  // namespace
}  // namespace attn
