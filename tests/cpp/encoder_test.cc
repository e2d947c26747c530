// Tests of the encoder: each operation against hand-worked values and a plain scalar loop, and
// the whole forward pass against a scalar double-precision BERT written out below.
#include "core/encoder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "test_model_writer.h"

#define EXPECT_HAS(haystack, needle) EXPECT_PRED_FORMAT2(::testing::IsSubstring, needle, haystack)

namespace attn {
namespace {

// ---- The operations ----

TEST(LayerNormTest, HandWorkedRow) {
  // mean 2.5, biased variance 1.25: (x - 2.5) / sqrt(1.25) = +-0.4472136, +-1.3416408.
  RowMajorMatrix x(1, 4);
  x << 1, 2, 3, 4;
  Eigen::VectorXf gamma(4), beta(4);
  gamma << 1, 1, 2, 1;
  beta << 0, 0, 0, 10;
  LayerNorm(x, gamma, beta, 0.0f);
  EXPECT_NEAR(x(0, 0), -1.3416408f, 1e-6);
  EXPECT_NEAR(x(0, 1), -0.4472136f, 1e-6);
  EXPECT_NEAR(x(0, 2), 2 * 0.4472136f, 1e-6);
  EXPECT_NEAR(x(0, 3), 10 + 1.3416408f, 1e-6);
}

TEST(LayerNormTest, EpsilonAndConstantRow) {
  // A constant row has variance 0: the output is beta, and eps keeps it finite.
  RowMajorMatrix x = RowMajorMatrix::Constant(2, 3, 7.0f);
  x(1, 0) = 8.0f;  // second row: mean 22/3, variance 2/9
  Eigen::VectorXf gamma = Eigen::VectorXf::Ones(3), beta = Eigen::VectorXf::Constant(3, 0.5f);
  LayerNorm(x, gamma, beta, 1e-5f);
  for (int j = 0; j < 3; ++j) EXPECT_EQ(x(0, j), 0.5f);
  EXPECT_NEAR(x(1, 0), 0.5 + (8 - 22.0 / 3) / std::sqrt(2.0 / 9 + 1e-5), 1e-6);
}

TEST(LayerNormTest, MatchesScalarLoop) {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  RowMajorMatrix x(5, 37);
  for (int i = 0; i < x.size(); ++i) x.data()[i] = normal(rng) + 4.0f;
  Eigen::VectorXf gamma(37), beta(37);
  for (int j = 0; j < 37; ++j) {
    gamma(j) = normal(rng);
    beta(j) = normal(rng);
  }
  const RowMajorMatrix original = x;
  LayerNorm(x, gamma, beta, 1e-12f);
  for (int i = 0; i < 5; ++i) {
    double mean = 0, var = 0;
    for (int j = 0; j < 37; ++j) mean += original(i, j);
    mean /= 37;
    for (int j = 0; j < 37; ++j) var += (original(i, j) - mean) * (original(i, j) - mean);
    var /= 37;
    for (int j = 0; j < 37; ++j) {
      const double want = (original(i, j) - mean) / std::sqrt(var + 1e-12) * gamma(j) + beta(j);
      EXPECT_NEAR(x(i, j), want, 1e-5 * (1 + std::fabs(want)));
    }
  }
}

TEST(SoftmaxTest, HandWorkedRows) {
  RowMajorMatrix s(3, 3);
  s << 0, std::log(2.0f), std::log(3.0f),  // exp: 1, 2, 3 -> 1/6, 2/6, 3/6
      1000, 1000, 1000,                     // overflows without subtracting the max
      -1000, 0, -1000;                      // one-hot within float
  SoftmaxRows(s);
  EXPECT_NEAR(s(0, 0), 1.0f / 6, 1e-7);
  EXPECT_NEAR(s(0, 1), 2.0f / 6, 1e-7);
  EXPECT_NEAR(s(0, 2), 3.0f / 6, 1e-7);
  for (int j = 0; j < 3; ++j) EXPECT_NEAR(s(1, j), 1.0f / 3, 1e-7);
  EXPECT_EQ(s(2, 0), 0.0f);
  EXPECT_EQ(s(2, 1), 1.0f);
}

TEST(SoftmaxTest, MatchesScalarLoopAndRowsSumToOne) {
  std::mt19937 rng(4);
  std::normal_distribution<float> normal(0.0f, 4.0f);
  RowMajorMatrix s(64, 512);
  for (int i = 0; i < s.size(); ++i) s.data()[i] = normal(rng);
  const RowMajorMatrix original = s;
  SoftmaxRows(s);
  for (int i = 0; i < s.rows(); ++i) {
    double max = original(i, 0), sum = 0, row_sum = 0;
    for (int j = 0; j < s.cols(); ++j) max = std::max(max, double{original(i, j)});
    for (int j = 0; j < s.cols(); ++j) sum += std::exp(original(i, j) - max);
    for (int j = 0; j < s.cols(); ++j) {
      const double want = std::exp(original(i, j) - max) / sum;
      ASSERT_NEAR(s(i, j), want, 1e-6 * want + 1e-9);
      row_sum += s(i, j);
    }
    EXPECT_NEAR(row_sum, 1.0, 1e-6);
  }
}

TEST(GeluTest, HandWorkedValues) {
  // x * Phi(x) with the standard normal CDF: Phi(1) = 0.8413447461, Phi(2) = 0.9772498681,
  // Phi(-1) = 0.1586552539, Phi(0.5) = 0.6914624613.
  float v[] = {0.0f, 1.0f, 2.0f, -1.0f, 0.5f, -6.0f};
  Gelu(v, 6);
  EXPECT_EQ(v[0], 0.0f);
  EXPECT_NEAR(v[1], 0.8413447461f, 1e-7);
  EXPECT_NEAR(v[2], 1.9544997361f, 2e-7);
  EXPECT_NEAR(v[3], -0.1586552539f, 1e-7);
  EXPECT_NEAR(v[4], 0.3457312306f, 1e-7);
  EXPECT_NEAR(v[5], -6.0f * 9.8658765e-10f, 1e-8);  // float erf rounds to -1 here
}

TEST(GeluTest, MatchesScalarLoop) {
  std::vector<float> v;
  for (float x = -8.0f; x <= 8.0f; x += 0.01f) v.push_back(x);
  std::vector<float> got = v;
  Gelu(got.data(), got.size());
  for (size_t i = 0; i < v.size(); ++i) {
    const double x = v[i];
    const double want = 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    ASSERT_NEAR(got[i], want, 1e-6 * (1 + std::fabs(want))) << x;
  }
}

// ---- A scalar double-precision BERT, written from the Hugging Face semantics ----

using Matrix = std::vector<std::vector<double>>;

struct ScalarResult {
  std::vector<Matrix> hidden;                  // L+1 of (n, d)
  std::vector<std::vector<Matrix>> attention;  // L x H of (n, n)
  std::vector<Matrix> query, key;              // L of (n, d)
};

const std::vector<float>& Values(const testing::ModelParts& parts, const std::string& name) {
  for (const auto& t : parts.tensors) {
    if (t.name == name) return t.values;
  }
  ADD_FAILURE() << "no tensor " << name;
  static const std::vector<float> empty;
  return empty;
}

// y = x W^T + b with W (out, in) row-major.
Matrix Linear(const Matrix& x, const std::vector<float>& w, const std::vector<float>& b) {
  const size_t out = b.size(), in = x[0].size();
  Matrix y(x.size(), std::vector<double>(out));
  for (size_t i = 0; i < x.size(); ++i) {
    for (size_t o = 0; o < out; ++o) {
      double acc = b[o];
      for (size_t k = 0; k < in; ++k) acc += x[i][k] * w[o * in + k];
      y[i][o] = acc;
    }
  }
  return y;
}

void ScalarLayerNorm(Matrix* x, const std::vector<float>& g, const std::vector<float>& b, double eps) {
  for (auto& row : *x) {
    double mean = 0, var = 0;
    for (double v : row) mean += v;
    mean /= row.size();
    for (double v : row) var += (v - mean) * (v - mean);
    var /= row.size();
    for (size_t j = 0; j < row.size(); ++j) row[j] = (row[j] - mean) / std::sqrt(var + eps) * g[j] + b[j];
  }
}

ScalarResult ScalarBert(const testing::ModelParts& parts, const std::vector<int32_t>& ids) {
  const ModelConfig& c = parts.config;
  const size_t n = ids.size(), d = c.hidden_size, H = c.num_attention_heads, dh = d / H;
  const double eps = c.layer_norm_eps;
  ScalarResult r;
  Matrix x(n, std::vector<double>(d));
  const auto& word = Values(parts, "embeddings.word_embeddings.weight");
  const auto& pos = Values(parts, "embeddings.position_embeddings.weight");
  const auto& type = Values(parts, "embeddings.token_type_embeddings.weight");
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < d; ++j) x[i][j] = double{word[ids[i] * d + j]} + pos[i * d + j] + type[j];
  }
  ScalarLayerNorm(&x, Values(parts, "embeddings.LayerNorm.weight"), Values(parts, "embeddings.LayerNorm.bias"), eps);
  r.hidden.push_back(x);
  for (uint32_t l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = "encoder.layer." + std::to_string(l) + ".";
    auto V = [&](const std::string& s) -> const std::vector<float>& { return Values(parts, p + s); };
    const Matrix q = Linear(x, V("attention.self.query.weight"), V("attention.self.query.bias"));
    const Matrix k = Linear(x, V("attention.self.key.weight"), V("attention.self.key.bias"));
    const Matrix v = Linear(x, V("attention.self.value.weight"), V("attention.self.value.bias"));
    r.query.push_back(q);
    r.key.push_back(k);
    Matrix context(n, std::vector<double>(d, 0.0));
    r.attention.emplace_back();
    for (size_t h = 0; h < H; ++h) {
      Matrix probs(n, std::vector<double>(n));
      for (size_t i = 0; i < n; ++i) {
        double max = -1e300, sum = 0;
        for (size_t j = 0; j < n; ++j) {
          double s = 0;
          for (size_t t = h * dh; t < (h + 1) * dh; ++t) s += q[i][t] * k[j][t];
          probs[i][j] = s / std::sqrt(static_cast<double>(dh));
          max = std::max(max, probs[i][j]);
        }
        for (size_t j = 0; j < n; ++j) sum += probs[i][j] = std::exp(probs[i][j] - max);
        for (size_t j = 0; j < n; ++j) probs[i][j] /= sum;
        for (size_t t = h * dh; t < (h + 1) * dh; ++t) {
          for (size_t j = 0; j < n; ++j) context[i][t] += probs[i][j] * v[j][t];
        }
      }
      r.attention.back().push_back(probs);
    }
    Matrix a = Linear(context, V("attention.output.dense.weight"), V("attention.output.dense.bias"));
    for (size_t i = 0; i < n; ++i) for (size_t j = 0; j < d; ++j) a[i][j] += x[i][j];
    ScalarLayerNorm(&a, V("attention.output.LayerNorm.weight"), V("attention.output.LayerNorm.bias"), eps);
    Matrix inter = Linear(a, V("intermediate.dense.weight"), V("intermediate.dense.bias"));
    for (auto& row : inter) for (double& u : row) u = 0.5 * u * (1 + std::erf(u / std::sqrt(2.0)));
    Matrix y = Linear(inter, V("output.dense.weight"), V("output.dense.bias"));
    for (size_t i = 0; i < n; ++i) for (size_t j = 0; j < d; ++j) y[i][j] += a[i][j];
    ScalarLayerNorm(&y, V("output.LayerNorm.weight"), V("output.LayerNorm.bias"), eps);
    r.hidden.push_back(y);
    x = y;
  }
  return r;
}

class EncoderTest : public ::testing::Test {
 protected:
  void Load(const testing::ModelParts& parts) {
    parts_ = parts;
    const std::vector<uint8_t> bytes = testing::Serialize(parts_);
    const Status status = Model::FromBuffer(bytes.data(), bytes.size(), &model_);
    ASSERT_TRUE(status.ok()) << status.message();
  }
  void ExpectMatchesScalar(const Activations& a, const std::vector<int32_t>& ids) {
    const ScalarResult want = ScalarBert(parts_, ids);
    const int n = static_cast<int>(ids.size()), d = a.hidden;
    ASSERT_EQ(a.tokens, n);
    double max_attention = 0, max_hidden = 0, max_qk = 0;
    for (int l = 0; l < a.layers; ++l) {
      for (int h = 0; h < a.heads; ++h) {
        for (int i = 0; i < n; ++i) {
          for (int j = 0; j < n; ++j) {
            max_attention = std::max(max_attention, std::fabs(a.Attention(l, h)(i, j) - want.attention[l][h][i][j]));
          }
        }
      }
      for (int i = 0; i < n; ++i) {
        for (int j = 0; j < d; ++j) {
          max_qk = std::max(max_qk, std::fabs(a.Query(l)(i, j) - want.query[l][i][j]));
          max_qk = std::max(max_qk, std::fabs(a.Key(l)(i, j) - want.key[l][i][j]));
        }
      }
    }
    for (int l = 0; l <= a.layers; ++l) {
      for (int i = 0; i < n; ++i) {
        for (int j = 0; j < d; ++j) {
          max_hidden = std::max(max_hidden, std::fabs(a.HiddenState(l)(i, j) - want.hidden[l][i][j]));
        }
      }
    }
    std::printf("vs scalar double: attention %.3g, hidden %.3g, query/key %.3g (n = %d)\n", max_attention,
                max_hidden, max_qk, n);
    EXPECT_LE(max_attention, 1e-5);
    EXPECT_LE(max_hidden, 1e-4);
    EXPECT_LE(max_qk, 1e-4);
  }
  void ExpectRowsSumToOne(const Activations& a) {
    for (int l = 0; l < a.layers; ++l) {
      for (int h = 0; h < a.heads; ++h) {
        for (int i = 0; i < a.tokens; ++i) {
          double sum = 0;
          for (int j = 0; j < a.tokens; ++j) sum += a.AttentionRow(l, h, i)[j];
          ASSERT_NEAR(sum, 1.0, 1e-6) << l << " " << h << " " << i;
        }
      }
    }
  }

  testing::ModelParts parts_;
  std::unique_ptr<Model> model_;
};

TEST_F(EncoderTest, ForwardMatchesScalarBert) {
  Load(testing::RandomModel(testing::TinyConfig(), 21));
  Encoder encoder(*model_);
  Activations a;
  const std::vector<int32_t> ids = {2, 5, 6, 7, 8, 5, 9, 10, 3};
  const Status status = encoder.Forward(ids, &a);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(a.layers, 2);
  EXPECT_EQ(a.heads, 4);
  EXPECT_EQ(a.hidden, 16);
  EXPECT_EQ(a.head_size(), 4);
  EXPECT_EQ(a.ids, ids);
  EXPECT_EQ(a.hidden_states.size(), 3u * 9 * 16);
  EXPECT_EQ(a.attention_probs.size(), 2u * 4 * 9 * 9);
  ExpectMatchesScalar(a, ids);
  ExpectRowsSumToOne(a);
  // The weights make sharp rows: attention is not trivially uniform.
  float max_weight = 0;
  for (float p : a.attention_probs) max_weight = std::max(max_weight, p);
  EXPECT_GT(max_weight, 0.5f);
}

TEST_F(EncoderTest, AnyConfigAndReusedBuffers) {
  ModelConfig c = testing::TinyConfig();
  c.hidden_size = 24;
  c.num_attention_heads = 3;
  c.num_hidden_layers = 3;
  c.intermediate_size = 20;
  c.layer_norm_eps = 1e-5f;
  Load(testing::RandomModel(c, 22));
  Encoder encoder(*model_);
  Activations a;
  std::vector<int32_t> long_ids(24);
  for (int i = 0; i < 24; ++i) long_ids[i] = (i * 7) % 40;
  const std::vector<int32_t> short_ids = {2, 13, 3};
  for (const std::vector<int32_t>* ids : std::vector<const std::vector<int32_t>*>{&long_ids, &short_ids, &long_ids}) {
    const Status status = encoder.Forward(*ids, &a);
    ASSERT_TRUE(status.ok()) << status.message();
    ExpectMatchesScalar(a, *ids);
    ExpectRowsSumToOne(a);
  }
  // One token: its row is [1].
  ASSERT_TRUE(encoder.Forward({2}, &a).ok());
  EXPECT_EQ(a.Attention(2, 1)(0, 0), 1.0f);
}

TEST_F(EncoderTest, ResumedPassEqualsFullPassBitForBit) {
  ModelConfig c = testing::TinyConfig();
  c.num_hidden_layers = 3;
  Load(testing::RandomModel(c, 25));
  Encoder encoder(*model_);
  const std::vector<int32_t> ids = {2, 5, 6, 7, 8, 9, 3};
  const size_t heads = size_t{c.num_hidden_layers} * c.num_attention_heads;
  ForwardOptions plain;
  plain.value_norms = true;
  Activations base;
  ASSERT_TRUE(encoder.Forward(ids, &base, plain).ok());
  // Every head removed alone, once by a full pass and once resumed at its layer from the
  // unablated pass (from the last layer down, as the contribution study runs them).
  Activations resumed = base;
  for (int32_t l = static_cast<int32_t>(c.num_hidden_layers) - 1; l >= 0; --l) {
    for (int32_t h = 0; h < static_cast<int32_t>(c.num_attention_heads); ++h) {
      ForwardOptions full = plain;
      full.removed_heads.assign(heads, 0);
      full.removed_heads[static_cast<size_t>(l) * c.num_attention_heads + h] = 1;
      Activations expected;
      ASSERT_TRUE(encoder.Forward(ids, &expected, full).ok());
      ForwardOptions resume = full;
      resume.first_layer = l;
      const Status status = encoder.Forward(ids, &resumed, resume);
      ASSERT_TRUE(status.ok()) << status.message();
      EXPECT_EQ(resumed.hidden_states, expected.hidden_states) << l << " " << h;
      EXPECT_EQ(resumed.attention_probs, expected.attention_probs) << l << " " << h;
      EXPECT_EQ(resumed.queries, expected.queries) << l << " " << h;
      EXPECT_EQ(resumed.keys, expected.keys) << l << " " << h;
      EXPECT_EQ(resumed.value_norms, expected.value_norms) << l << " " << h;
      EXPECT_EQ(resumed.removed_heads, expected.removed_heads) << l << " " << h;
    }
  }
  // A resume the activations cannot support is refused, and says why.
  ForwardOptions resume;
  resume.first_layer = 2;
  resume.removed_heads.assign(heads, 0);
  resume.removed_heads[0] = 1;  // layer 1's head 1: in front of layer 3, which base did not remove
  Activations copy = base;
  Status status = encoder.Forward(ids, &copy, resume);
  EXPECT_FALSE(status.ok());
  EXPECT_HAS(status.message(), "same heads removed before it");
  resume.removed_heads.clear();
  copy = base;
  status = encoder.Forward({2, 5, 6, 3}, &copy, resume);
  EXPECT_FALSE(status.ok());
  EXPECT_HAS(status.message(), "same tokens");
  Activations empty;
  EXPECT_FALSE(encoder.Forward(ids, &empty, resume).ok());
  resume.first_layer = 4;
  EXPECT_HAS(encoder.Forward(ids, &copy, resume).message(), "outside [0, 3]");
  resume.first_layer = -1;
  EXPECT_HAS(encoder.Forward(ids, &copy, resume).message(), "outside [0, 3]");
  // Resuming at the end runs no layer and changes nothing.
  resume.first_layer = 3;
  copy = base;
  ASSERT_TRUE(encoder.Forward(ids, &copy, resume).ok());
  EXPECT_EQ(copy.hidden_states, base.hidden_states);
}

TEST_F(EncoderTest, RejectsBadInput) {
  Load(testing::RandomModel(testing::TinyConfig(), 23));
  Encoder encoder(*model_);
  Activations a;
  Status status = encoder.Forward({}, &a);
  EXPECT_FALSE(status.ok());
  EXPECT_HAS(status.message(), "no tokens");
  status = encoder.Forward(std::vector<int32_t>(25, 5), &a);
  EXPECT_FALSE(status.ok());
  EXPECT_HAS(status.message(), "sentence has 25 tokens, more than the model's 24 positions");
  status = encoder.Forward({2, 40, 3}, &a);
  EXPECT_FALSE(status.ok());
  EXPECT_HAS(status.message(), "token id 40 at position 1 is outside the vocabulary [0, 40)");
  status = encoder.Forward({2, -1, 3}, &a);
  EXPECT_FALSE(status.ok());
  EXPECT_TRUE(encoder.Forward(std::vector<int32_t>(24, 5), &a).ok());
}

TEST_F(EncoderTest, MaskedLmLogitsMatchScalarHead) {
  Load(testing::RandomModel(testing::TinyConfig(), 24, true, true));
  Encoder encoder(*model_);
  Activations a;
  const std::vector<int32_t> ids = {2, 5, 4, 7, 3};
  ASSERT_TRUE(encoder.Forward(ids, &a).ok());
  std::vector<float> logits;
  const Status status = encoder.MaskedLmLogits(a, 2, &logits);
  ASSERT_TRUE(status.ok()) << status.message();
  ASSERT_EQ(logits.size(), 40u);

  const ScalarResult r = ScalarBert(parts_, ids);
  Matrix h = {r.hidden.back()[2]};
  Matrix t = Linear(h, Values(parts_, "cls.predictions.transform.dense.weight"),
                    Values(parts_, "cls.predictions.transform.dense.bias"));
  for (double& u : t[0]) u = 0.5 * u * (1 + std::erf(u / std::sqrt(2.0)));
  ScalarLayerNorm(&t, Values(parts_, "cls.predictions.transform.LayerNorm.weight"),
                  Values(parts_, "cls.predictions.transform.LayerNorm.bias"), 1e-12);
  const Matrix want = Linear(t, Values(parts_, "embeddings.word_embeddings.weight"), Values(parts_, "cls.predictions.bias"));
  for (size_t v = 0; v < 40; ++v) EXPECT_NEAR(logits[v], want[0][v], 1e-4) << v;

  EXPECT_FALSE(encoder.MaskedLmLogits(a, 5, &logits).ok());

  // Several passes at once (another sentence, other positions): each row equals its single call.
  Activations b;
  ASSERT_TRUE(encoder.Forward({2, 9, 8, 3}, &b).ok());
  RowMajorMatrix batch;
  const std::vector<int32_t> positions = {2, 1, 0};
  ASSERT_TRUE(encoder.MaskedLmLogitsBatch({&a, &b, &a}, positions, &batch).ok());
  ASSERT_EQ(batch.rows(), 3);
  ASSERT_EQ(batch.cols(), 40);
  double largest = 0;
  for (int r = 0; r < 3; ++r) {
    ASSERT_TRUE(encoder.MaskedLmLogits(r == 1 ? b : a, positions[static_cast<size_t>(r)], &logits).ok());
    for (size_t v = 0; v < 40; ++v) largest = std::max(largest, std::abs(double{batch(r, static_cast<Eigen::Index>(v))} - logits[v]));
  }
  std::printf("batched masked-LM logits vs single: largest difference %.3g\n", largest);
  EXPECT_LE(largest, 1e-5);
  EXPECT_HAS(encoder.MaskedLmLogitsBatch({&a, &b}, {1}, &batch).message(), "one position per pass");
  EXPECT_HAS(encoder.MaskedLmLogitsBatch({&a, &b}, {1, 4}, &batch).message(), "outside the sentence");
  EXPECT_TRUE(encoder.MaskedLmLogitsBatch({}, {}, &batch).ok());
  EXPECT_EQ(batch.rows(), 0);

  Load(testing::RandomModel(testing::TinyConfig(), 24));
  Encoder plain(*model_);
  ASSERT_TRUE(plain.Forward(ids, &a).ok());
  const Status absent = plain.MaskedLmLogits(a, 1, &logits);
  EXPECT_FALSE(absent.ok());
  EXPECT_HAS(absent.message(), "no masked-LM head");
}

// A pass that stops at the last layer's attention keeps every number an analysis hands on, and
// the masked-LM head gets the same final rows from it as from a full pass.
TEST_F(EncoderTest, LastLayerAttentionOnlyKeepsTheAttentionAndMakesFinalRowsOnDemand) {
  Load(testing::RandomModel(testing::TinyConfig(), 31, true, true));
  Encoder encoder(*model_);
  const std::vector<int32_t> ids = {2, 5, 4, 7, 9, 6, 3};
  Activations full, early;
  ASSERT_TRUE(encoder.Forward(ids, &full).ok());
  ForwardOptions options;
  options.last_layer_attention_only = true;
  ASSERT_TRUE(encoder.Forward(ids, &early, options).ok());
  EXPECT_TRUE(full.final_hidden);
  EXPECT_FALSE(early.final_hidden);
  EXPECT_EQ(early.attention_probs, full.attention_probs);
  EXPECT_EQ(early.queries, full.queries);
  EXPECT_EQ(early.keys, full.keys);
  const size_t inputs = static_cast<size_t>(full.layers) * full.tokens * full.hidden;  // [0, L)
  EXPECT_TRUE(std::equal(full.hidden_states.begin(), full.hidden_states.begin() + static_cast<std::ptrdiff_t>(inputs),
                         early.hidden_states.begin()));
  for (int32_t l = 0; l < full.layers; ++l) {
    for (int32_t h = 0; h < full.heads; ++h) {
      for (int32_t i = 0; i < full.tokens; ++i) {
        EXPECT_EQ(early.RowSummaries(l, h)[i].entropy, full.RowSummaries(l, h)[i].entropy);
      }
    }
  }
  // Natively one row's products sum in another order than n rows' (Eigen): within rounding.
  constexpr double kRowTolerance = 1e-5;
  double largest = 0, largest_logit = 0;
  std::vector<float> want, got;
  for (int32_t i = 0; i < full.tokens; ++i) {
    const RowMajorMatrix row = encoder.FinalHiddenRow(early, i);
    ASSERT_EQ(row.rows(), 1);
    ASSERT_EQ(row.cols(), full.hidden);
    largest = std::max(largest, double{(row - full.HiddenState(full.layers).row(i)).cwiseAbs().maxCoeff()});
    EXPECT_TRUE(encoder.FinalHiddenRow(full, i) == full.HiddenState(full.layers).row(i));
    ASSERT_TRUE(encoder.MaskedLmLogits(full, i, &want).ok());
    ASSERT_TRUE(encoder.MaskedLmLogits(early, i, &got).ok());
    for (size_t v = 0; v < want.size(); ++v) largest_logit = std::max(largest_logit, double{std::abs(want[v] - got[v])});
  }
  std::printf("final rows made on demand vs the full pass: largest difference %.3g, logits %.3g (tol %.3g)\n",
              largest, largest_logit, kRowTolerance);
  EXPECT_LE(largest, kRowTolerance);
  EXPECT_LE(largest_logit, kRowTolerance);
  EXPECT_EQ(encoder.FinalHiddenRow(early, -1).size(), 0) << "a position outside the sentence has no row";
  EXPECT_EQ(encoder.FinalHiddenRow(early, early.tokens).size(), 0);

  // A pass resumed at the last layer with nothing to run keeps what it resumed; one that runs
  // the last layer again does what its own options say.
  ForwardOptions resume;
  resume.first_layer = full.layers;
  Activations resumed = early;
  ASSERT_TRUE(encoder.Forward(ids, &resumed, resume).ok());
  EXPECT_FALSE(resumed.final_hidden);
  resume.first_layer = full.layers - 1;
  ASSERT_TRUE(encoder.Forward(ids, &resumed, resume).ok());
  EXPECT_TRUE(resumed.final_hidden);
  EXPECT_EQ(resumed.hidden_states, full.hidden_states);

  // What reads the last layer's context runs the whole pass: removed heads, values, value norms.
  ForwardOptions removed = options;
  removed.removed_heads.assign(static_cast<size_t>(full.layers) * full.heads, 0);
  ASSERT_TRUE(encoder.Forward(ids, &early, removed).ok());
  EXPECT_TRUE(early.final_hidden);
  EXPECT_EQ(early.hidden_states, full.hidden_states);
  ForwardOptions values = options;
  values.values = true;
  ASSERT_TRUE(encoder.Forward(ids, &early, values).ok());
  EXPECT_TRUE(early.final_hidden);
  ForwardOptions norms = options;
  norms.value_norms = true;
  ASSERT_TRUE(encoder.Forward(ids, &early, norms).ok());
  EXPECT_TRUE(early.final_hidden);
}

TEST(EncoderFlopsTest, CountsDenseAndAttentionProducts) {
  ModelConfig c = testing::TinyConfig();
  // Per layer: 2 n (4 d^2 + 2 d f) + 4 n^2 d with n 10, d 16, f 32: 2*10*(1024+1024) + 6400.
  EXPECT_DOUBLE_EQ(Encoder::ForwardFlops(c, 10), 2 * (2.0 * 10 * 2048 + 6400));
}

}  // namespace
}  // namespace attn
