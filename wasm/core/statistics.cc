// Ranks, Spearman, the portable generator, percentile intervals, the cluster bootstrap's
// resamples and the agreement permutation null (statistics.h says what each promises).
#include "core/statistics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

namespace attn::stats {

std::vector<double> Ranks(const std::vector<double>& values, double tie_tolerance) {
  const size_t n = values.size();
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return values[a] < values[b]; });
  std::vector<double> ranks(n);
  for (size_t k = 0; k < n;) {
    size_t m = k;
    while (m + 1 < n && values[order[m + 1]] - values[order[m]] <= tie_tolerance) ++m;
    const double shared = (static_cast<double>(k) + static_cast<double>(m)) / 2.0 + 1.0;
    for (size_t q = k; q <= m; ++q) ranks[order[q]] = shared;
    k = m + 1;
  }
  return ranks;
}

double Spearman(const std::vector<double>& x, const std::vector<double>& y, double tie_tolerance) {
  const double undefined = std::numeric_limits<double>::quiet_NaN();
  if (x.size() != y.size() || x.size() < 2) return undefined;
  const std::vector<double> rx = Ranks(x, tie_tolerance), ry = Ranks(y, tie_tolerance);
  const double n = static_cast<double>(x.size());
  const double mean = (n + 1.0) / 2.0;  // the mean of any rank vector of n values
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < rx.size(); ++i) {
    sxy += (rx[i] - mean) * (ry[i] - mean);
    sxx += (rx[i] - mean) * (rx[i] - mean);
    syy += (ry[i] - mean) * (ry[i] - mean);
  }
  return sxx > 0 && syy > 0 ? sxy / std::sqrt(sxx * syy) : undefined;
}

uint64_t Random::Next() {
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint32_t Random::Below(uint32_t n) {
  // Rejection of the top partial block keeps every value equally likely.
  const uint64_t limit = std::numeric_limits<uint64_t>::max() - std::numeric_limits<uint64_t>::max() % n;
  uint64_t draw;
  do {
    draw = Next();
  } while (draw >= limit);
  return static_cast<uint32_t>(draw % n);
}

Interval PercentileInterval(std::vector<double> values, double level) {
  values.erase(std::remove_if(values.begin(), values.end(), [](double v) { return !std::isfinite(v); }),
               values.end());
  if (values.empty()) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    return {nan, nan};
  }
  std::sort(values.begin(), values.end());
  const auto at = [&](double q) {
    const double position = q * static_cast<double>(values.size() - 1);
    const size_t below = static_cast<size_t>(std::floor(position));
    const size_t above = std::min(below + 1, values.size() - 1);
    return values[below] + (position - static_cast<double>(below)) * (values[above] - values[below]);
  };
  return {at((1.0 - level) / 2.0), at((1.0 + level) / 2.0)};
}

std::vector<std::vector<uint32_t>> ClusterResamples(uint32_t clusters, const BootstrapOptions& options) {
  Random random(options.seed);
  std::vector<std::vector<uint32_t>> out(static_cast<size_t>(std::max(0, options.resamples)));
  if (clusters == 0) return out;
  for (std::vector<uint32_t>& draw : out) {
    draw.resize(clusters);
    for (uint32_t& index : draw) index = random.Below(clusters);
  }
  return out;
}

Agreement AgreementWithNull(const std::vector<int32_t>& a, const std::vector<int32_t>& b,
                            int32_t permutations, uint64_t seed, const std::vector<int32_t>& classes) {
  Agreement out;
  const size_t n = std::min(a.size(), b.size());
  out.items = static_cast<int64_t>(n);
  if (n == 0) return out;
  // The items of each class, in item order; without classes (or too few), one class.
  std::map<int32_t, std::vector<size_t>> members;
  for (size_t i = 0; i < n; ++i) members[classes.size() >= n ? classes[i] : 0].push_back(i);
  for (const auto& [group, items] : members) {
    std::map<int32_t, int64_t> count_a, count_b;
    for (size_t i : items) {
      out.observed += a[i] == b[i];
      ++count_a[a[i]];
      ++count_b[b[i]];
    }
    double expected = 0;
    for (const auto& [choice, count] : count_a) {
      const auto other = count_b.find(choice);
      if (other != count_b.end()) expected += static_cast<double>(count) * static_cast<double>(other->second);
    }
    out.expected += expected / static_cast<double>(items.size());
  }
  // Fisher-Yates shuffles of b within each class: every pairing keeps both distributions, class
  // by class.
  Random random(seed);
  std::vector<int32_t> shuffled(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(n));
  int64_t hits = 0;
  for (int32_t p = 0; p < permutations; ++p) {
    for (const auto& [group, items] : members) {
      for (size_t i = items.size() - 1; i > 0; --i) {
        std::swap(shuffled[items[i]], shuffled[items[random.Below(static_cast<uint32_t>(i + 1))]]);
      }
    }
    int64_t agree = 0;
    for (size_t i = 0; i < n; ++i) agree += a[i] == shuffled[i];
    hits += agree >= out.observed;
  }
  out.permutations = std::max(0, permutations);
  out.p_value = static_cast<double>(hits + 1) / static_cast<double>(out.permutations + 1);
  return out;
}

}  // namespace attn::stats
