// Parity with an independent implementation: scripts/reference/reference_bert.py (plain PyTorch,
// float64) writes fixtures with scripts/reference/make_test_fixtures.sh; this test runs the C++
// encoder on the same model files and ids and compares, printing the largest difference per
// tensor per model.
// Fixture folder: $ATTN_FIXTURES_DIR, else ${ATTN_BINARY_DIR}/../fixtures. For each model m:
// <dir>/<m>.attn and <dir>/<m>/<k>/{ids.txt, meta.txt, attention.f32, hidden.f32, rollout.f32}.
// Missing fixtures fail the test; ATTN_ALLOW_SKIP=1 (a developer switch, scripts/README.md)
// skips it instead.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <vector>

#include "core/analysis.h"
#include "core/encoder.h"
#include "core/model_file.h"

namespace attn {
namespace {

// The fidelity bars of docs/ARCHITECTURE.md ("Fidelity bars"), max absolute difference.
constexpr double kAttentionTolerance = 1e-5;
constexpr double kHiddenTolerance = 1e-4;
constexpr double kRolloutTolerance = 1e-5;
constexpr double kRowSumTolerance = 1e-6;

std::string FixturesDir() {
  const char* env = std::getenv("ATTN_FIXTURES_DIR");
  if (env != nullptr && *env != '\0') return env;
  return std::string(ATTN_BINARY_DIR) + "/../fixtures";
}

bool Exists(const std::string& path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0;
}

bool ReadText(const std::string& path, std::string* out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  out->assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  return true;
}

// Reads count little-endian float32 values (this test runs on little-endian hosts).
::testing::AssertionResult ReadFloats(const std::string& path, size_t count, std::vector<float>* out) {
  std::string bytes;
  if (!ReadText(path, &bytes)) return ::testing::AssertionFailure() << "cannot read " << path;
  if (bytes.size() != 4 * count) {
    return ::testing::AssertionFailure() << path << " has " << bytes.size() << " bytes, expected "
                                         << 4 * count;
  }
  out->resize(count);
  std::copy(bytes.begin(), bytes.end(), reinterpret_cast<char*>(out->data()));
  return ::testing::AssertionSuccess();
}

double MaxAbsDifference(const float* a, const float* b, size_t count) {
  double worst = 0;
  for (size_t i = 0; i < count; ++i) {
    const double d = std::fabs(double{a[i]} - double{b[i]});
    if (!(d <= worst)) worst = d;  // NaN propagates as the worst case
  }
  return worst;
}

void CheckModel(const std::string& dir, const std::string& name) {
  const std::string model_path = dir + "/" + name + ".attn";
  std::unique_ptr<Model> model;
  const Status status = Model::FromFile(model_path, &model);
  ASSERT_TRUE(status.ok()) << status.message();
  const ModelConfig& c = model->config();
  Encoder encoder(*model);
  Activations a;
  double worst_attention = 0, worst_hidden = 0, worst_rollout = 0, worst_row_sum = 0;
  int cases = 0, ablated_cases = 0;
  for (int k = 0;; ++k) {
    const std::string case_dir = dir + "/" + name + "/" + std::to_string(k);
    if (!Exists(case_dir)) break;
    SCOPED_TRACE(case_dir);
    std::string meta_text, ids_text;
    ASSERT_TRUE(ReadText(case_dir + "/meta.txt", &meta_text));
    ASSERT_TRUE(ReadText(case_dir + "/ids.txt", &ids_text));
    std::istringstream meta(meta_text), ids_stream(ids_text);
    size_t L = 0, H = 0, n = 0, d = 0;
    ASSERT_TRUE(meta >> L >> H >> n >> d) << "meta.txt: '" << meta_text << "'";
    ASSERT_EQ(L, c.num_hidden_layers);
    ASSERT_EQ(H, c.num_attention_heads);
    ASSERT_EQ(d, c.hidden_size);
    std::vector<int32_t> ids{std::istream_iterator<int32_t>(ids_stream), std::istream_iterator<int32_t>()};
    ASSERT_EQ(ids.size(), n);
    std::vector<float> attention, hidden, rollout;
    ASSERT_TRUE(ReadFloats(case_dir + "/attention.f32", L * H * n * n, &attention));
    ASSERT_TRUE(ReadFloats(case_dir + "/hidden.f32", (L + 1) * n * d, &hidden));
    ASSERT_TRUE(ReadFloats(case_dir + "/rollout.f32", n * n, &rollout));

    // Cases with heads removed (Hugging Face head_mask semantics) carry removed.txt.
    ForwardOptions options;
    std::string removed_text;
    if (Exists(case_dir + "/removed.txt")) {
      ASSERT_TRUE(ReadText(case_dir + "/removed.txt", &removed_text));
      std::istringstream flags(removed_text);
      for (int flag; flags >> flag;) options.removed_heads.push_back(static_cast<uint8_t>(flag));
      ASSERT_EQ(options.removed_heads.size(), L * H) << "removed.txt: '" << removed_text << "'";
      ++ablated_cases;
    }
    const Status forward = encoder.Forward(ids, &a, options);
    ASSERT_TRUE(forward.ok()) << forward.message();
    const RowMajorMatrix ours = Rollout(a, 0.5);
    const double da = MaxAbsDifference(a.attention_probs.data(), attention.data(), attention.size());
    const double dh = MaxAbsDifference(a.hidden_states.data(), hidden.data(), hidden.size());
    const double dr = MaxAbsDifference(ours.data(), rollout.data(), rollout.size());
    EXPECT_LE(da, kAttentionTolerance) << "attention, n = " << n;
    EXPECT_LE(dh, kHiddenTolerance) << "hidden states, n = " << n;
    EXPECT_LE(dr, kRolloutTolerance) << "rollout, n = " << n;
    worst_attention = std::max(worst_attention, da);
    worst_hidden = std::max(worst_hidden, dh);
    worst_rollout = std::max(worst_rollout, dr);
    for (size_t l = 0; l < L; ++l) {
      for (size_t h = 0; h < H; ++h) {
        for (size_t i = 0; i < n; ++i) {
          double sum = 0;
          const float* row = a.AttentionRow(static_cast<int32_t>(l), static_cast<int32_t>(h), static_cast<int32_t>(i));
          for (size_t j = 0; j < n; ++j) sum += row[j];
          worst_row_sum = std::max(worst_row_sum, std::fabs(sum - 1.0));
        }
      }
    }
    ++cases;
  }
  EXPECT_LE(worst_row_sum, kRowSumTolerance);
  ASSERT_GT(cases, 0) << "no cases under " << dir << "/" << name << "/; re-run scripts/reference/make_test_fixtures.sh";
  ASSERT_GT(ablated_cases, 0) << "no cases with heads removed under " << dir << "/" << name
                              << "/; re-run scripts/reference/make_test_fixtures.sh";
  std::printf("parity %s (%d cases, %d with heads removed): max |diff| attention %.3g (tol %.0e), hidden %.3g (tol %.0e), "
              "rollout %.3g (tol %.0e); max |row sum - 1| %.3g\n",
              name.c_str(), cases, ablated_cases, worst_attention, kAttentionTolerance, worst_hidden, kHiddenTolerance,
              worst_rollout, kRolloutTolerance, worst_row_sum);
}

class ParityTest : public ::testing::TestWithParam<const char*> {};

TEST_P(ParityTest, MatchesIndependentPyTorchReference) {
  const std::string dir = FixturesDir();
  const std::string model_path = dir + "/" + GetParam() + ".attn";
  if (!Exists(model_path)) {
    const std::string message = "parity fixtures missing: no " + model_path +
                                "; run scripts/reference/make_test_fixtures.sh " + dir +
                                " (or set ATTN_FIXTURES_DIR; ATTN_ALLOW_SKIP=1 skips this test)";
    const char* allow_skip = std::getenv("ATTN_ALLOW_SKIP");
    if (allow_skip != nullptr && std::string(allow_skip) == "1") GTEST_SKIP() << message;
    FAIL() << message;
  }
  CheckModel(dir, GetParam());
}

INSTANTIATE_TEST_SUITE_P(Models, ParityTest, ::testing::Values("tiny", "mini"),
                         [](const ::testing::TestParamInfo<const char*>& info) { return std::string(info.param); });

}  // namespace
}  // namespace attn
