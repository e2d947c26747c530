// attention-cli bench: milliseconds per forward pass and per forward + analysis (rollout and
// head profiles) for several sentence lengths, with the FLOP count and the GFLOP/s achieved.
// Ids are random valid ids; the weights are whatever the model file holds. Last, the time the
// tokenizer takes for its worst case of canonical ordering (security review F4).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/text.h"
#include "core/analysis.h"
#include "core/encoder.h"
#include "core/model_file.h"
#include "core/tokenizer.h"

namespace attn::cli {
namespace {

constexpr const char* kUsage = "usage: attention-cli bench --model FILE\n";
constexpr int32_t kLengths[] = {8, 16, 32, 64, 128, 512};
// Repeats per length: at least kMinRepeats, and more until kTargetSeconds have passed.
constexpr int kMinRepeats = 5;
constexpr int kMaxRepeats = 200;
constexpr double kTargetSeconds = 1.0;

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t m = values.size() / 2;
  return values.size() % 2 ? values[m] : 0.5 * (values[m - 1] + values[m]);
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int RunBench(int argc, char** argv) {
  std::string model_path;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--model" && i + 1 < argc) {
      model_path = argv[++i];
    } else {
      std::fprintf(stderr, "attention-cli bench: unexpected argument '%s'.\n%s", arg.c_str(), kUsage);
      return 2;
    }
  }
  if (model_path.empty()) {
    std::fprintf(stderr, "attention-cli bench: --model FILE is missing.\n%s", kUsage);
    return 2;
  }
  std::unique_ptr<LoadedModel> loaded;
  Status status = LoadedModel::FromFile(model_path, &loaded);
  if (!status.ok()) {
    std::fprintf(stderr, "attention-cli bench: %s\n", Printable(status.message()).c_str());
    return 1;
  }
  const ModelConfig& c = loaded->model().config();
  std::printf("model: %s (%u layers, %u heads, hidden %u, intermediate %u)\n",
              Printable(loaded->model().name()).c_str(), c.num_hidden_layers, c.num_attention_heads,
              c.hidden_size, c.intermediate_size);
  std::printf("%6s %8s %12s %14s %10s %9s\n", "tokens", "repeats", "forward ms", "+analysis ms",
              "GFLOP", "GFLOP/s");
  Encoder& encoder = loaded->encoder();
  Activations activations;
  std::mt19937 rng(12345);
  std::uniform_int_distribution<int32_t> random_id(0, static_cast<int32_t>(c.vocab_size) - 1);
  for (const int32_t n : kLengths) {
    if (static_cast<uint32_t>(n) > c.max_position_embeddings) continue;
    std::vector<int32_t> ids(static_cast<size_t>(n));
    for (int32_t& id : ids) id = random_id(rng);
    const std::vector<TokenRole> roles(static_cast<size_t>(n), TokenRole::kOrdinary);
    status = encoder.Forward(ids, &activations);  // warm-up, and sizes the buffers
    std::vector<double> forward_ms, total_ms;
    const auto bench_start = std::chrono::steady_clock::now();
    while (status.ok() && (static_cast<int>(forward_ms.size()) < kMinRepeats ||
                           (SecondsSince(bench_start) < kTargetSeconds &&
                            static_cast<int>(forward_ms.size()) < kMaxRepeats))) {
      const auto start = std::chrono::steady_clock::now();
      status = encoder.Forward(ids, &activations);
      const double forward = SecondsSince(start);
      std::vector<HeadProfile> profiles;
      if (status.ok()) status = AccumulateHeadProfiles(activations, roles, &profiles);
      const RowMajorMatrix rollout = Rollout(activations);
      const double total = SecondsSince(start);
      forward_ms.push_back(1e3 * forward);
      total_ms.push_back(1e3 * total);
    }
    if (!status.ok()) {
      std::fprintf(stderr, "attention-cli bench: %s\n", Printable(status.message()).c_str());
      return 1;
    }
    const double flops = Encoder::ForwardFlops(c, n);
    const double forward = Median(forward_ms);
    std::printf("%6d %8zu %12.3f %14.3f %10.4f %9.1f\n", n, forward_ms.size(), forward,
                Median(total_ms), flops / 1e9, flops / 1e9 / (forward / 1e3));
  }
  // One word of 100,000 combining marks in descending class (230, 220, 202, 1): each run of
  // non-starters is sorted in O(k log k), where an insertion sort took minutes.
  std::string marks = "a";
  for (const char* mark : {"\u0301", "\u0316", "\u0327", "\u0334"}) {
    for (int k = 0; k < 25000; ++k) marks += mark;
  }
  const auto tokenize_start = std::chrono::steady_clock::now();
  const Encoding encoding = loaded->tokenizer().Encode(marks);
  std::printf("tokenize one word of 100,000 combining marks in descending class: %.1f ms (%zu tokens)\n",
              1e3 * SecondsSince(tokenize_start), encoding.tokens.size());
  return 0;
}

}  // namespace attn::cli
