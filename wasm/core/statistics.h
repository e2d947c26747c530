// The statistics the series' claims rest on: ranks and Spearman's rank correlation, a portable
// pseudo-random generator, percentile intervals, a cluster bootstrap over sentences and a
// permutation null for the agreement of two per-item choices. Plain functions of numbers, so
// that independent code can re-derive every value (tests/py/test_sentence_set.py does).
#pragma once

#include <cstdint>
#include <vector>

namespace attn::stats {

// Ranks from 1, ties sharing their mean rank (the ranks Spearman's rho uses). (n) Values tie
// when they are equal or, with a tolerance, when in sorted order each is within it of the one
// before (a chain of near-equal values is one tie).
std::vector<double> Ranks(const std::vector<double>& values, double tie_tolerance = 0);

// Spearman's rank correlation: Pearson's correlation of the two rank vectors. NaN when the
// sizes differ, fewer than two values are given, or either side is constant (rho undefined).
double Spearman(const std::vector<double>& x, const std::vector<double>& y, double tie_tolerance = 0);

// splitmix64: the same draws in the native and the wasm build (std::uniform_int_distribution
// differs between standard libraries), so the CLI and the page resample identically.
class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed) {}
  uint64_t Next();
  // Uniform in [0, n) without modulo bias; n > 0.
  uint32_t Below(uint32_t n);

 private:
  uint64_t state_;
};

// The interval holding the central `level` of values: numpy's default percentile (linear
// interpolation between order statistics) at (1 - level) / 2 and (1 + level) / 2. Non-finite
// values are left out; an empty list gives NaN, NaN.
struct Interval {
  double low = 0, high = 0;
};
Interval PercentileInterval(std::vector<double> values, double level);

// How the set's uncertainty is measured: a cluster bootstrap resamples whole sentences with
// replacement (the words of one sentence are not independent draws), `resamples` times from
// `seed`; intervals hold the central `level`.
struct BootstrapOptions {
  int32_t resamples = 1000;
  uint64_t seed = 20261201;
  double level = 0.95;
};

// The bootstrap's resamples of `clusters` sentence indices: each a list of `clusters` indices
// drawn with replacement. Every statistic of one run uses the same resamples.
std::vector<std::vector<uint32_t>> ClusterResamples(uint32_t clusters, const BootstrapOptions& options);

// The agreement of two choices per item (which head attends most, which matters most), and
// its chance level under the null that keeps both choices' distributions over items and breaks
// only their pairing: expected = sum_k count_a(k) * count_b(k) / n. p_value is the share of
// `permutations` random pairings (b shuffled against a) that agree at least as often as
// observed, counted as (hits + 1) / (permutations + 1). With `classes` (one per item), the null
// also keeps which class each choice falls in: b is shuffled within each class only, and
// expected = sum over classes c and choices k of count_a(k, c) * count_b(k, c) / n_c. Without
// classes every item is in one class (the same shuffles, draw for draw).
struct Agreement {
  int64_t items = 0;
  int64_t observed = 0;
  double expected = 0;
  double p_value = 1;
  int32_t permutations = 0;
};
Agreement AgreementWithNull(const std::vector<int32_t>& a, const std::vector<int32_t>& b,
                            int32_t permutations, uint64_t seed, const std::vector<int32_t>& classes = {});

}  // namespace attn::stats
