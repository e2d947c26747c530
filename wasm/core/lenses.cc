#include "core/lenses.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

#include "core/kernels.h"
#include "core/statistics.h"

namespace attn {
namespace {

using Index = Eigen::Index;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr float kNaNFloat = std::numeric_limits<float>::quiet_NaN();
// Residual capacity below this counts as none: capacities are attention weights, at most 1.
constexpr double kFlowEpsilon = 1e-12;
// Occlusion runs this many passes before scoring them together (MaskedLmLogitsBatch reads the
// decoder's table once per batch); each pass holds its activations until then.
constexpr size_t kOcclusionBatch = 8;

// A flow network for Dinic's algorithm, built once and run from several sources: Run resets
// the residual capacities first. The search is iterative, so no recursion deeper than the
// graph (a wasm stack is small).
class FlowNetwork {
 public:
  explicit FlowNetwork(int32_t nodes)
      : first_(static_cast<size_t>(nodes), -1), level_(static_cast<size_t>(nodes)), cursor_(static_cast<size_t>(nodes)) {}

  void AddEdge(int32_t from, int32_t to, double capacity) {
    Add(from, to, std::max(0.0, capacity));
    Add(to, from, 0.0);
  }

  double Run(int32_t source, int32_t sink) {
    residual_ = capacity_;
    if (source == sink) return 0;
    double total = 0;
    while (Levels(source, sink)) total += BlockingFlow(source, sink);
    return total;
  }

 private:
  void Add(int32_t from, int32_t to, double capacity) {
    to_.push_back(to);
    capacity_.push_back(capacity);
    next_.push_back(first_[static_cast<size_t>(from)]);
    first_[static_cast<size_t>(from)] = static_cast<int32_t>(to_.size() - 1);
  }

  // Breadth-first levels over edges with residual capacity; whether the sink is reached.
  bool Levels(int32_t source, int32_t sink) {
    std::fill(level_.begin(), level_.end(), -1);
    queue_.assign(1, source);
    level_[static_cast<size_t>(source)] = 0;
    for (size_t head = 0; head < queue_.size(); ++head) {
      const int32_t u = queue_[head];
      for (int32_t e = first_[static_cast<size_t>(u)]; e != -1; e = next_[static_cast<size_t>(e)]) {
        const int32_t v = to_[static_cast<size_t>(e)];
        if (level_[static_cast<size_t>(v)] < 0 && residual_[static_cast<size_t>(e)] > kFlowEpsilon) {
          level_[static_cast<size_t>(v)] = level_[static_cast<size_t>(u)] + 1;
          queue_.push_back(v);
        }
      }
    }
    return level_[static_cast<size_t>(sink)] >= 0;
  }

  // Augments along level-increasing paths until none is left; returns the flow added.
  double BlockingFlow(int32_t source, int32_t sink) {
    cursor_ = first_;
    path_.clear();
    double total = 0;
    int32_t u = source;
    for (;;) {
      if (u == sink) {
        double pushed = std::numeric_limits<double>::infinity();
        for (int32_t e : path_) pushed = std::min(pushed, residual_[static_cast<size_t>(e)]);
        for (int32_t e : path_) {
          residual_[static_cast<size_t>(e)] -= pushed;
          residual_[static_cast<size_t>(e ^ 1)] += pushed;
        }
        total += pushed;
        // Back to the tail of the first edge the push saturated.
        size_t k = 0;
        while (k < path_.size() && residual_[static_cast<size_t>(path_[k])] > kFlowEpsilon) ++k;
        path_.resize(k);
        u = k == 0 ? source : to_[static_cast<size_t>(path_[k - 1])];
        continue;
      }
      int32_t& e = cursor_[static_cast<size_t>(u)];
      while (e != -1 && !(residual_[static_cast<size_t>(e)] > kFlowEpsilon &&
                          level_[static_cast<size_t>(to_[static_cast<size_t>(e)])] == level_[static_cast<size_t>(u)] + 1)) {
        e = next_[static_cast<size_t>(e)];
      }
      if (e != -1) {
        path_.push_back(e);
        u = to_[static_cast<size_t>(e)];
        continue;
      }
      if (u == source) return total;
      level_[static_cast<size_t>(u)] = -1;  // a dead end: no path through u in this phase
      const int32_t back = path_.back();
      path_.pop_back();
      u = to_[static_cast<size_t>(back ^ 1)];
    }
  }

  std::vector<int32_t> first_, to_, next_;
  std::vector<double> capacity_, residual_;
  std::vector<int32_t> level_, cursor_, queue_, path_;
};

Status CheckAnalysis(const LoadedModel& model, const SentenceAnalysis& analysis, const LensOptions& options) {
  const Activations& a = analysis.activations;
  const ModelConfig& c = model.model().config();
  if (a.layers != static_cast<int32_t>(c.num_hidden_layers) || a.heads != static_cast<int32_t>(c.num_attention_heads) ||
      a.hidden != static_cast<int32_t>(c.hidden_size) || a.tokens <= 0) {
    return Status::Error("the lenses need an analysis made by this model");
  }
  const size_t layer_floats = static_cast<size_t>(a.layers) * a.tokens * a.hidden;
  if (a.values.size() != layer_floats || a.contexts.size() != layer_floats) {
    return Status::Error("the lenses read the pass's value vectors: analyse with the values output (kOutputValues)");
  }
  for (uint8_t removed : a.removed_heads) {
    if (removed) return Status::Error("the lenses read an unaltered pass, and this one has heads removed");
  }
  if (!(options.residual_weight >= 0.0 && options.residual_weight <= 1.0)) {
    return Status::Error("the rollout residual weight must be in [0, 1], got " + std::to_string(options.residual_weight));
  }
  const int32_t n = a.tokens;
  auto check_rows = [n](const std::vector<int32_t>& rows, const char* what) {
    for (int32_t row : rows) {
      if (row < 0 || row >= n) {
        return Status::Error(std::string(what) + " row " + std::to_string(row) + " is outside the sentence [0, " +
                             std::to_string(n) + ")");
      }
    }
    return Status::Ok();
  };
  Status status = check_rows(options.flow_rows, "flow");
  if (status.ok()) status = check_rows(options.rows, "lens");
  if (status.ok()) status = check_rows(options.value_zeroing_rows, "value zeroing");
  if (status.ok() && options.target != -1 && (options.target < 0 || options.target >= n)) {
    status = Status::Error("target position " + std::to_string(options.target) + " is outside the sentence [0, " +
                           std::to_string(n) + ")");
  }
  return status;
}

// The rows a list names, as flags (n).
std::vector<uint8_t> RowFlags(const std::vector<int32_t>& rows, int32_t n) {
  std::vector<uint8_t> flags(static_cast<size_t>(n), 0);
  for (int32_t row : rows) flags[static_cast<size_t>(row)] = 1;
  return flags;
}

// What one layer's rows share, made once per layer: f_h(x_j) of every head; for the mixing
// lenses the same centred and scaled by the LayerNorm's gamma (centring is linear, so T_i(x_j) =
// (sum_h alpha^h_ij g_h(x_j) + [i = j] g(x_i)) / s_i with g(v) = gamma (v - mean(v))), the
// residual's g(x_i), and per row the first LayerNorm's s_i and output z_i; for weighted_layer
// the Gram matrix of each token's f_h (||sum_h a_h f_h||^2 = sum_hh' a_h a_h' <f_h, f_h'>).
struct LayerParts {
  std::vector<RowMajorMatrix> carried;   // H of (n, d): f_h(x_j)
  std::vector<RowMajorMatrix> centered;  // H of (n, d): g_h(x_j), when mixing
  RowMajorMatrix own;                    // (n, d): g(x_i), when mixing
  RowMajorMatrix output;                 // (n, d): z_i, when mixing
  std::vector<double> scale;             // (n): s_i, when mixing
  std::vector<double> gram;              // (n, H, H), when weighted
};

// gamma (v - mean(v)) of a row of d floats, into out.
void Centre(const float* v, const float* gamma, Index d, float* out) {
  double mean = 0;
  for (Index k = 0; k < d; ++k) mean += v[k];
  mean /= static_cast<double>(d);
  const auto m = static_cast<float>(mean);
  for (Index k = 0; k < d; ++k) out[k] = gamma[k] * (v[k] - m);
}

LayerParts MakeLayerParts(const Model& model, const Activations& a, int32_t l, bool weighted, bool mixing) {
  const Index n = a.tokens, d = a.hidden, H = a.heads, dh = d / H;
  const LayerWeights& w = model.weights().layers[static_cast<size_t>(l)];
  const ConstMatrixMap values(a.values.data() + l * n * d, n, d);
  LayerParts parts;
  parts.carried.resize(static_cast<size_t>(H));
  for (Index h = 0; h < H; ++h) {
    // (n, d_head) times the head's columns of W_O (d, d_head) transposed: the SIMD kernel of the
    // attention scores in wasm (core/kernels.h), Eigen natively.
    RowMajorMatrix& carried = parts.carried[static_cast<size_t>(h)];
    carried.resize(n, d);
    MatMulTransposed(values.middleCols(h * dh, dh), w.attention_output_weight.middleCols(h * dh, dh), carried);
  }
  if (weighted) {
    parts.gram.assign(static_cast<size_t>(n * H * H), 0.0);
    for (Index j = 0; j < n; ++j) {
      for (Index h = 0; h < H; ++h) {
        for (Index g = 0; g <= h; ++g) {
          const float* p = parts.carried[static_cast<size_t>(h)].row(j).data();
          const float* q = parts.carried[static_cast<size_t>(g)].row(j).data();
          double dot = 0;
          for (Index k = 0; k < d; ++k) dot += static_cast<double>(p[k]) * q[k];
          parts.gram[static_cast<size_t>((j * H + h) * H + g)] = parts.gram[static_cast<size_t>((j * H + g) * H + h)] = dot;
        }
      }
    }
  }
  if (!mixing) return parts;
  const float* gamma = w.attention_output_norm_weight.data();
  parts.centered.resize(static_cast<size_t>(H));
  for (Index h = 0; h < H; ++h) {
    RowMajorMatrix& centered = parts.centered[static_cast<size_t>(h)];
    centered.resize(n, d);
    for (Index j = 0; j < n; ++j) Centre(parts.carried[static_cast<size_t>(h)].row(j).data(), gamma, d, centered.row(j).data());
  }
  // y = x + context W_O^T + b_O, the first LayerNorm's input.
  const ConstMatrixMap x = a.HiddenState(l);
  const ConstMatrixMap contexts(a.contexts.data() + l * n * d, n, d);
  RowMajorMatrix attended(n, d);
  MatMulTransposed(contexts, w.attention_output_weight, attended);
  parts.own.resize(n, d);
  parts.output.resize(n, d);
  parts.scale.resize(static_cast<size_t>(n));
  std::vector<double> y(static_cast<size_t>(d));
  for (Index i = 0; i < n; ++i) {
    Centre(x.row(i).data(), gamma, d, parts.own.row(i).data());
    double mean = 0;
    for (Index k = 0; k < d; ++k) {
      y[static_cast<size_t>(k)] = double{x(i, k)} + attended(i, k) + w.attention_output_bias(k);
      mean += y[static_cast<size_t>(k)];
    }
    mean /= static_cast<double>(d);
    double variance = 0;
    for (double v : y) variance += (v - mean) * (v - mean);
    const double s = std::sqrt(variance / static_cast<double>(d) + static_cast<double>(model.config().layer_norm_eps));
    parts.scale[static_cast<size_t>(i)] = s;
    for (Index k = 0; k < d; ++k) {
      parts.output(i, k) = static_cast<float>((y[static_cast<size_t>(k)] - mean) / s * gamma[k] + w.attention_output_norm_bias(k));
    }
  }
  return parts;
}

// T_i(x_j) (d floats) into t.
void Transformed(const Activations& a, const LayerParts& parts, int32_t l, Index i, Index j, float* t) {
  const Index d = a.hidden, n = a.tokens;
  const auto inverse = static_cast<float>(1.0 / parts.scale[static_cast<size_t>(i)]);
  for (Index k = 0; k < d; ++k) t[k] = 0.0f;
  for (int32_t h = 0; h < a.heads; ++h) {
    const float alpha = a.attention_probs[((static_cast<size_t>(l) * a.heads + h) * n + i) * n + j] * inverse;
    const float* g = parts.centered[static_cast<size_t>(h)].row(j).data();
    for (Index k = 0; k < d; ++k) t[k] += alpha * g[k];
  }
  if (i == j) {
    const float* own = parts.own.row(i).data();
    for (Index k = 0; k < d; ++k) t[k] += inverse * own[k];
  }
}

// ||t||^2 and sum_k (|z_k| - |z_k - t_k|) = ||z||_1 - ||z - t||_1 over d floats: each in blocks
// of 8 summed in float (which the compiler can keep in SIMD lanes), the blocks in double. The
// second sum is taken term by term, so its rounding scales with ||t||_1, not with ||z||_1.
void MixingSums(const float* t, const float* z, Index d, double* squares, double* closer) {
  double sq = 0, cl = 0;
  Index k = 0;
  for (; k + 8 <= d; k += 8) {
    float bs = 0, bc = 0;
    for (Index r = 0; r < 8; ++r) {
      const float v = t[k + r], zk = z[k + r];
      bs += v * v;
      bc += std::fabs(zk) - std::fabs(zk - v);
    }
    sq += bs;
    cl += bc;
  }
  for (; k < d; ++k) {
    sq += static_cast<double>(t[k]) * t[k];
    cl += std::fabs(static_cast<double>(z[k])) - std::fabs(static_cast<double>(z[k]) - t[k]);
  }
  *squares = sq;
  *closer = cl;
}

// weighted, weighted_layer, mixing, mixing_ratio and alti of one layer, for the rows flagged.
void LayerLenses(const Model& model, const Activations& a, int32_t l, bool weighted, bool mixing,
                 const std::vector<uint8_t>& rows, Lenses* out) {
  const Index n = a.tokens, H = a.heads, d = a.hidden;
  const size_t nn = static_cast<size_t>(n * n);
  const LayerParts parts = MakeLayerParts(model, a, l, weighted, mixing);
  if (weighted) {
    for (Index h = 0; h < H; ++h) {
      for (Index i = 0; i < n; ++i) {
        const float* alpha = a.AttentionRow(l, static_cast<int32_t>(h), static_cast<int32_t>(i));
        float* target = out->weighted.data() + (static_cast<size_t>(l * H + h) * n + i) * n;
        for (Index j = 0; j < n; ++j) {
          target[j] = alpha[j] * static_cast<float>(std::sqrt(parts.gram[static_cast<size_t>((j * H + h) * H + h)]));
        }
      }
    }
  }
  std::vector<float> t(static_cast<size_t>(d));
  std::vector<double> norms(static_cast<size_t>(n)), c(static_cast<size_t>(n));
  std::vector<double> alpha(static_cast<size_t>(H));
  for (Index i = 0; i < n; ++i) {
    if (!rows[static_cast<size_t>(i)]) continue;
    if (weighted) {
      float* target = out->weighted_layer.data() + l * nn + static_cast<size_t>(i) * n;
      for (Index j = 0; j < n; ++j) {
        for (Index h = 0; h < H; ++h) alpha[static_cast<size_t>(h)] = a.AttentionRow(l, static_cast<int32_t>(h), static_cast<int32_t>(i))[j];
        double squared = 0;
        const double* gram = parts.gram.data() + static_cast<size_t>(j * H * H);
        for (Index h = 0; h < H; ++h) {
          for (Index g = 0; g < H; ++g) squared += alpha[static_cast<size_t>(h)] * alpha[static_cast<size_t>(g)] * gram[h * H + g];
        }
        target[j] = static_cast<float>(std::sqrt(std::max(0.0, squared)));
      }
    }
    if (!mixing) continue;
    const float* z = parts.output.row(i).data();
    double total = 0, c_total = 0;
    for (Index j = 0; j < n; ++j) {
      Transformed(a, parts, l, i, j, t.data());
      double squares = 0, closer = 0;
      MixingSums(t.data(), z, d, &squares, &closer);
      norms[static_cast<size_t>(j)] = std::sqrt(squares);
      c[static_cast<size_t>(j)] = std::max(0.0, closer);  // c_ij
      total += norms[static_cast<size_t>(j)];
      c_total += c[static_cast<size_t>(j)];
    }
    const double others = total - norms[static_cast<size_t>(i)];
    out->mixing_ratio[static_cast<size_t>(l * n + i)] = static_cast<float>(total > 0 ? others / total : 0.0);
    float* mixing_row = out->mixing.data() + l * nn + static_cast<size_t>(i) * n;
    float* alti_row = out->alti.data() + l * nn + static_cast<size_t>(i) * n;
    for (Index j = 0; j < n; ++j) {
      mixing_row[j] = static_cast<float>(norms[static_cast<size_t>(j)]);
      alti_row[j] = static_cast<float>(c_total > 0 ? c[static_cast<size_t>(j)] / c_total : 0.0);
    }
  }
}

// Row i of attention flow over the capacities (L matrices (n, n), A'_l of rollout).
void FlowRow(const std::vector<RowMajorMatrix>& capacities, Index i, float* flow, float* normalized) {
  const Index L = static_cast<Index>(capacities.size()), n = capacities[0].rows();
  // Nodes: layer l's tokens at l n + k for l < L (layer 0 holds the sources), the sink at L n.
  const int32_t sink = static_cast<int32_t>(L * n);
  FlowNetwork network(sink + 1);
  for (Index l = 0; l + 1 < L; ++l) {
    const RowMajorMatrix& m = capacities[static_cast<size_t>(l)];
    for (Index from = 0; from < n; ++from) {
      for (Index to = 0; to < n; ++to) {
        network.AddEdge(static_cast<int32_t>(l * n + from), static_cast<int32_t>((l + 1) * n + to), m(to, from));
      }
    }
  }
  const RowMajorMatrix& last = capacities[static_cast<size_t>(L - 1)];
  for (Index k = 0; k < n; ++k) network.AddEdge(static_cast<int32_t>((L - 1) * n + k), sink, last(i, k));
  double total = 0;
  std::vector<double> values(static_cast<size_t>(n));
  for (Index j = 0; j < n; ++j) {
    values[static_cast<size_t>(j)] = network.Run(static_cast<int32_t>(j), sink);
    total += values[static_cast<size_t>(j)];
  }
  for (Index j = 0; j < n; ++j) {
    flow[j] = static_cast<float>(values[static_cast<size_t>(j)]);
    normalized[j] = static_cast<float>(total > 0 ? values[static_cast<size_t>(j)] / total : 0.0);
  }
}

// Row i of value zeroing in layer l.
void ValueZeroingRow(const Encoder& encoder, const Activations& a, int32_t l, Index i, float* row) {
  const Index n = a.tokens, d = a.hidden, H = a.heads, dh = d / H;
  const ConstMatrixMap x = a.HiddenState(l);
  const ConstMatrixMap values(a.values.data() + l * n * d, n, d);
  const ConstMatrixMap contexts(a.contexts.data() + l * n * d, n, d);
  // Rows 0 .. n-1: token i's context with token j's value vectors zeroed; row n: as it was.
  RowMajorMatrix context(n + 1, d), input(n + 1, d), output;
  context.rowwise() = contexts.row(i);
  input.rowwise() = x.row(i);
  for (Index h = 0; h < H; ++h) {
    context.topRows(n).middleCols(h * dh, dh) -=
        a.Attention(l, static_cast<int32_t>(h)).row(i).transpose().asDiagonal() * values.middleCols(h * dh, dh);
  }
  encoder.FinishLayer(l, context, input, &output);
  // 1 - cos as half the squared distance of the unit vectors: no cancellation near 0.
  const Eigen::VectorXd original = output.row(n).transpose().cast<double>().normalized();
  double total = 0;
  std::vector<double> distance(static_cast<size_t>(n));
  for (Index j = 0; j < n; ++j) {
    const Eigen::VectorXd altered = output.row(j).transpose().cast<double>().normalized();
    const double value = std::clamp(0.5 * (altered - original).squaredNorm(), 0.0, 2.0);
    distance[static_cast<size_t>(j)] = value;
    total += value;
  }
  for (Index j = 0; j < n; ++j) row[j] = static_cast<float>(total > 0 ? distance[static_cast<size_t>(j)] / total : 0.0);
}

// occlusion, target_top1 and target_logprob.
Status Occlusion(LoadedModel& model, const SentenceAnalysis& analysis, int32_t t, Lenses* out) {
  LoadedModel::EntryProbability best;
  Status status = model.ProbabilityOf(analysis, t, 0, &best);
  if (status.ok()) status = model.ProbabilityOf(analysis, t, best.top1, &best);
  if (!status.ok()) return status;
  out->target_top1 = best.top1;
  out->target_logprob = best.log_probability;
  const Tokenizer& tokenizer = model.tokenizer();
  const std::vector<int32_t>& ids = analysis.activations.ids;
  const int32_t n = analysis.activations.tokens;
  out->occlusion.assign(static_cast<size_t>(n), kNaN);
  std::vector<int32_t> positions;
  for (int32_t j = 0; j < n; ++j) {
    const int32_t id = ids[static_cast<size_t>(j)];
    if (j != t && id != tokenizer.cls_id() && id != tokenizer.sep_id()) positions.push_back(j);
  }
  std::vector<Activations> passes(std::min(kOcclusionBatch, positions.size()));
  std::vector<LoadedModel::EntryProbability> scored;
  for (size_t start = 0; start < positions.size(); start += kOcclusionBatch) {
    const size_t count = std::min(kOcclusionBatch, positions.size() - start);
    std::vector<const Activations*> batch;
    for (size_t k = 0; k < count; ++k) {
      std::vector<int32_t> occluded = ids;
      occluded[static_cast<size_t>(positions[start + k])] = tokenizer.mask_id();
      status = model.encoder().Forward(occluded, &passes[k]);
      if (!status.ok()) return status;
      batch.push_back(&passes[k]);
    }
    status = model.ProbabilitiesOf(batch, t, best.top1, &scored);
    if (!status.ok()) return status;
    for (size_t k = 0; k < count; ++k) {
      out->occlusion[static_cast<size_t>(positions[start + k])] = best.log_probability - scored[k].log_probability;
    }
  }
  return Status::Ok();
}

}  // namespace

const char* FaithfulnessLensName(FaithfulnessLens lens) {
  switch (lens) {
    case FaithfulnessLens::kAttentionLastMean: return "attention_last_mean";
    case FaithfulnessLens::kRollout: return "rollout";
    case FaithfulnessLens::kFlow: return "flow";
    case FaithfulnessLens::kAltiRollout: return "alti_rollout";
    case FaithfulnessLens::kWeightedLayerLast: return "weighted_layer_last";
  }
  return "";
}

std::vector<int32_t> LensOptions::AllRows(int32_t n) {
  std::vector<int32_t> rows(static_cast<size_t>(std::max(n, 0)));
  std::iota(rows.begin(), rows.end(), 0);
  return rows;
}

double SpearmanRho(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() < 3) return kNaN;
  return stats::Spearman(x, y, kTieTolerance);
}

Status DecomposeAttentionBlock(const Model& model, const Activations& activations, int32_t layer, int32_t row,
                               AttentionBlockParts* out) {
  const Activations& a = activations;
  const size_t layer_floats = static_cast<size_t>(a.layers) * a.tokens * a.hidden;
  if (a.layers != static_cast<int32_t>(model.config().num_hidden_layers) || a.values.size() != layer_floats ||
      a.contexts.size() != layer_floats) {
    return Status::Error("taking the attention block apart needs a pass of this model with its values kept");
  }
  if (layer < 0 || layer >= a.layers || row < 0 || row >= a.tokens) {
    return Status::Error("layer " + std::to_string(layer) + ", row " + std::to_string(row) + " is outside the pass");
  }
  const Index n = a.tokens, d = a.hidden;
  const LayerParts parts = MakeLayerParts(model, a, layer, false, true);
  out->parts.resize(n, d);
  std::vector<float> t(static_cast<size_t>(d));
  for (Index j = 0; j < n; ++j) {
    Transformed(a, parts, layer, row, j, t.data());
    for (Index k = 0; k < d; ++k) out->parts(j, k) = t[static_cast<size_t>(k)];
  }
  const LayerWeights& w = model.weights().layers[static_cast<size_t>(layer)];
  const Eigen::VectorXd bias = w.attention_output_bias.cast<double>();
  out->scale = parts.scale[static_cast<size_t>(row)];
  out->bias = ((bias.array() - bias.mean()) / out->scale * w.attention_output_norm_weight.cast<double>().array() +
               w.attention_output_norm_bias.cast<double>().array()).matrix();
  out->output = parts.output.row(row).transpose().cast<double>();
  return Status::Ok();
}

double MaxFlow(int32_t nodes, const std::vector<FlowEdge>& edges, int32_t source, int32_t sink) {
  if (nodes <= 0 || source < 0 || sink < 0 || source >= nodes || sink >= nodes) return 0;
  FlowNetwork network(nodes);
  for (const FlowEdge& e : edges) {
    if (e.from >= 0 && e.to >= 0 && e.from < nodes && e.to < nodes) network.AddEdge(e.from, e.to, e.capacity);
  }
  return network.Run(source, sink);
}

Status ComputeLenses(LoadedModel& model, const SentenceAnalysis& analysis, const LensOptions& options,
                     Lenses* out) {
  Status status = CheckAnalysis(model, analysis, options);
  if (!status.ok()) return status;
  const Activations& a = analysis.activations;
  const int32_t L = a.layers, H = a.heads, n = a.tokens, t = options.target;
  const size_t nn = static_cast<size_t>(n) * static_cast<size_t>(n);
  const bool target = t >= 0;
  const bool weighted = options.weighted || target, mixing = options.mixing || target;
  *out = Lenses();
  out->layers = L;
  out->heads = H;
  out->tokens = n;
  out->target = target ? t : -1;
  std::fill(std::begin(out->faithfulness), std::end(out->faithfulness), kNaN);
  // Every row when none is named, or when the target's score needs alti_rollout.
  const bool all_rows = options.rows.empty() || target;
  const std::vector<uint8_t> lens_rows = all_rows ? std::vector<uint8_t>(static_cast<size_t>(n), 1) : RowFlags(options.rows, n);
  const float fill = all_rows ? 0.0f : kNaNFloat;
  out->weighted.assign(weighted ? static_cast<size_t>(L) * H * nn : 0, 0.0f);
  out->weighted_layer.assign(weighted ? static_cast<size_t>(L) * nn : 0, fill);
  out->mixing.assign(mixing ? static_cast<size_t>(L) * nn : 0, fill);
  out->alti.assign(mixing ? static_cast<size_t>(L) * nn : 0, fill);
  out->mixing_ratio.assign(mixing ? static_cast<size_t>(L) * n : 0, fill);
  if (weighted || mixing) {
    for (int32_t l = 0; l < L; ++l) LayerLenses(model.model(), a, l, weighted, mixing, lens_rows, out);
  }
  if (mixing && all_rows) {
    RowMajorMatrix product = Eigen::Map<const RowMajorMatrix>(out->alti.data(), n, n);
    for (int32_t l = 1; l < L; ++l) {
      const RowMajorMatrix next = Eigen::Map<const RowMajorMatrix>(out->alti.data() + l * nn, n, n) * product;
      product = next;
    }
    out->alti_rollout.assign(product.data(), product.data() + nn);
  }
  const RowMajorMatrix rollout = Rollout(a, options.residual_weight);
  out->rollout.assign(rollout.data(), rollout.data() + nn);

  std::vector<uint8_t> flow_rows = RowFlags(options.flow_rows, n);
  if (target) flow_rows[static_cast<size_t>(t)] = 1;
  if (std::find(flow_rows.begin(), flow_rows.end(), 1) != flow_rows.end()) {
    out->flow.assign(nn, kNaNFloat);
    out->flow_normalized.assign(nn, kNaNFloat);
    std::vector<RowMajorMatrix> capacities;
    for (int32_t l = 0; l < L; ++l) capacities.push_back(RolloutLayer(a, l, options.residual_weight));
    for (int32_t i = 0; i < n; ++i) {
      if (flow_rows[static_cast<size_t>(i)]) {
        FlowRow(capacities, i, out->flow.data() + static_cast<size_t>(i) * n,
                out->flow_normalized.data() + static_cast<size_t>(i) * n);
      }
    }
  }
  const std::vector<uint8_t> zeroing_rows = RowFlags(options.value_zeroing_rows, n);
  if (!options.value_zeroing_rows.empty()) {
    out->value_zeroing.assign(static_cast<size_t>(L) * nn, kNaNFloat);
    for (int32_t l = 0; l < L; ++l) {
      for (int32_t i = 0; i < n; ++i) {
        if (zeroing_rows[static_cast<size_t>(i)]) {
          ValueZeroingRow(model.encoder(), a, l, i, out->value_zeroing.data() + l * nn + static_cast<size_t>(i) * n);
        }
      }
    }
  }
  if (!target) return Status::Ok();

  status = Occlusion(model, analysis, t, out);
  if (!status.ok()) return status;
  const RowMajorMatrix last_mean = HeadAverage(a, L - 1);
  const float* rows[kFaithfulnessLenses] = {
      last_mean.data() + static_cast<size_t>(t) * n,
      out->rollout.data() + static_cast<size_t>(t) * n,
      out->flow.data() + static_cast<size_t>(t) * n,
      out->alti_rollout.data() + static_cast<size_t>(t) * n,
      out->weighted_layer.data() + static_cast<size_t>(L - 1) * nn + static_cast<size_t>(t) * n,
  };
  std::vector<double> effect;
  for (int32_t j = 0; j < n; ++j) {
    if (!std::isnan(out->occlusion[static_cast<size_t>(j)])) effect.push_back(out->occlusion[static_cast<size_t>(j)]);
  }
  for (int k = 0; k < kFaithfulnessLenses; ++k) {
    std::vector<double> lens;
    for (int32_t j = 0; j < n; ++j) {
      if (!std::isnan(out->occlusion[static_cast<size_t>(j)])) lens.push_back(rows[k][j]);
    }
    out->faithfulness[k] = SpearmanRho(effect, lens);
  }
  return Status::Ok();
}

}  // namespace attn
