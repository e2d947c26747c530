// The BERT encoder forward pass for one sentence, with Hugging Face BertModel semantics in
// eval mode (no dropout, token type 0 everywhere, no padding). It keeps what the explainer
// shows: every layer's hidden states, every head's attention probabilities, and each layer's
// query and key projections (so a page can show q . k for one head).
// Dimensions: n tokens, d model (hidden), H heads, d_head = d / H, f intermediate, L layers.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <vector>

#include "core/kernels.h"
#include "core/model_file.h"
#include "core/row_math.h"
#include "core/status.h"

namespace attn {

using MatrixMap = Eigen::Map<RowMajorMatrix>;

// The operations, exposed so that tests can check each against a plain scalar loop.
// Each row of x (n, d) becomes (x - mean) / sqrt(biased variance + eps) * gamma + beta.
void LayerNorm(Eigen::Ref<RowMajorMatrix> x, const Eigen::Ref<const Eigen::VectorXf>& gamma,
               const Eigen::Ref<const Eigen::VectorXf>& beta, float eps);
// x = LayerNorm(x + residual), both (n, d), the sum taken in double.
void AddLayerNorm(Eigen::Ref<RowMajorMatrix> x, const Eigen::Ref<const RowMajorMatrix>& residual,
                  const Eigen::Ref<const Eigen::VectorXf>& gamma,
                  const Eigen::Ref<const Eigen::VectorXf>& beta, float eps);
// Each row of scores (n, n) becomes the softmax of s scale (scale > 0); summaries, when not
// null, gets each row's summary (n; core/row_math.h).
void SoftmaxRows(Eigen::Ref<RowMajorMatrix> scores, float scale = 1.0f, RowSummary* summaries = nullptr);
// The exact (erf) GELU, in place: 0.5 x (1 + erf(x / sqrt 2)).
void Gelu(float* values, size_t count);

// Activation arrays start at Eigen's largest packet alignment: Eigen's vectorised loops peel
// their first elements up to an aligned address, so on an unaligned buffer the order of a sum,
// and with it the last bit of a result, would depend on where the heap happened to put it.
using FloatBuffer = std::vector<float, Eigen::aligned_allocator<float>>;

// Everything one forward pass keeps, in flat row-major arrays (one typed array each for JS).
struct Activations {
  int32_t layers = 0, heads = 0, tokens = 0, hidden = 0;  // L, H, n, d
  std::vector<int32_t> ids;            // (n)
  FloatBuffer hidden_states;           // (L+1, n, d): [0] the embeddings' output, [l+1] layer l's
                                       // ([L] only when final_hidden)
  FloatBuffer attention_probs;  // (L, H, n, n): [l][h][i][j], row i sums to 1
  // (L, H, n): each attention row's max, first argmax, sum and entropy, taken by the softmax
  // that made it (SoftmaxRowSummary), so that no later pass reads the rows again for them.
  std::vector<RowSummary> row_summaries;
  FloatBuffer queries;          // (L, n, d): x W_q^T + b_q, before the 1/sqrt(d_head)
  FloatBuffer keys;             // (L, n, d): x W_k^T + b_k; head h is columns
                                       // [h d_head, (h+1) d_head)
  // (L, H, n) when ForwardOptions::value_norms: ||W_O^h v_j||, the norm of token j's value
  // vector in head h carried through the head's slice of the output projection (without its
  // bias). a_ij times it is the value-weighted reading ||a_ij W_O^h v_j|| of Kobayashi et al.,
  // "Attention is not only a weight" (EMNLP 2020). Else empty.
  FloatBuffer value_norms;
  // (L, n, d) each when ForwardOptions::values, else empty. values: x W_v^T + b_v, head h's
  // value vectors in columns [h d_head, (h+1) d_head). contexts: what the output projection
  // W_O mixes back into d numbers, head h's columns sum_j a_ij v_j^h (a removed head's columns
  // are what replaced it: zero, or ForwardOptions::replacements).
  FloatBuffer values;
  FloatBuffer contexts;
  std::vector<uint8_t> removed_heads;  // (L * H), 1 where the head's output was removed
  bool replaced = false;  // removed heads took ForwardOptions::replacements, not zero
  // Whether hidden_states[L], the last layer's output, is filled. False after a pass that
  // stopped at the last layer's attention (ForwardOptions::last_layer_attention_only): then
  // nothing in the arrays above depends on it, and Encoder::FinalHiddenRow computes a row of
  // it when one is needed (the masked-LM head), the same numbers a full pass gives.
  bool final_hidden = true;

  int32_t head_size() const { return heads ? hidden / heads : 0; }
  ConstMatrixMap HiddenState(int32_t index) const;  // (n, d), index in [0, L]
  ConstMatrixMap Attention(int32_t layer, int32_t head) const;  // (n, n)
  ConstMatrixMap Query(int32_t layer) const;  // (n, d)
  ConstMatrixMap Key(int32_t layer) const;    // (n, d)
  // Row i of Attention(layer, head): n floats.
  const float* AttentionRow(int32_t layer, int32_t head, int32_t row) const;
  // The summaries of one head's rows: n of them.
  const RowSummary* RowSummaries(int32_t layer, int32_t head) const;
};

// What Forward does beyond the plain pass.
struct ForwardOptions {
  // (L * H), index l * H + h; nonzero removes that head: Hugging Face's head_mask semantics,
  // its attention probabilities times 0 before they weight the values, so its slice of the
  // context is zero. The probabilities it computed are still reported in attention_probs.
  // Empty: no head is removed.
  std::vector<uint8_t> removed_heads;
  bool value_norms = false;  // fill Activations::value_norms
  bool values = false;       // fill Activations::values and contexts
  // Empty, or (L * H * d_head) floats: a removed head's slice of the context becomes its row
  // here, the same for every token, instead of zero. With each head's mean context over a set
  // of sentences (MeanHeadContexts, core/sentence_set.h) this is mean-ablation: the head's
  // output is replaced by its average, so that what its removal changes is what the head adds
  // beyond that average, where zeroing also removes the average itself.
  std::vector<float> replacements;
  // Resume a pass: layers before first_layer are taken as they are in *out, which must hold a
  // pass over the same ids with the same heads removed in those layers (and value norms, when
  // asked for, already filled); only layers first_layer .. L-1 are run again. Every number is
  // the one a full pass gives, bit for bit: a caller that removes one head after another (the
  // contribution study) saves the layers in front of it. 0: the whole pass.
  int32_t first_layer = 0;
  // Stop the last layer after its attention probabilities: its values, context, output
  // projection and feed-forward block, about a fifth of the pass, feed only hidden_states[L],
  // which an analysis that hands on attention, its statistics and rollout never reads.
  // Activations::final_hidden is then false. Ignored (the whole pass runs) when heads are
  // removed or values or value norms are asked for, which the last layer's context feeds.
  bool last_layer_attention_only = false;

  // Whether these options can run over `ids` with a model of config `c`: a head mask of L * H
  // entries or none, replacements of L * H * d_head floats or none, first_layer in [0, L], and
  // for a resumed pass, `previous` (the activations it resumes) a pass over the same ids with
  // the same heads removed before first_layer, replaced the same way, and with values kept
  // when they are asked for.
  Status Check(const ModelConfig& c, const std::vector<int32_t>& ids, const Activations& previous) const;
};

class Encoder {
 public:
  // The model must outlive the encoder.
  explicit Encoder(const Model& model);

  // ids: token ids, [CLS] ... [SEP] as the tokenizer makes them. Fails (and leaves *out in an
  // unspecified state) when there are no ids, more than max_position_embeddings, or an id
  // outside [0, vocab_size).
  Status Forward(const std::vector<int32_t>& ids, Activations* out,
                 const ForwardOptions& options = ForwardOptions());

  // The masked-LM head's scores over the vocabulary (V) for one position of a forward pass:
  // dense + GELU + LayerNorm, then the tied word-embedding decoder plus cls.predictions.bias.
  // Fails when the model has no masked-LM head or position is out of range.
  Status MaskedLmLogits(const Activations& activations, int32_t position,
                        std::vector<float>* logits) const;
  // The same for several passes at one position each: row r of *logits (k, V) is pass r's. The
  // decoder's table (V, d) is read once for all of them, where k single calls read it k times
  // (the table is the largest array of the model; the contribution study scores 1 + L * H
  // passes per word). Equal to the single calls within float rounding (a matrix product sums
  // in another order than a matrix-vector one).
  Status MaskedLmLogitsBatch(const std::vector<const Activations*>& passes,
                             const std::vector<int32_t>& positions, RowMajorMatrix* logits) const;

  // Row `position` (in [0, n); else an empty matrix) of the pass's final hidden state (1, d):
  // hidden_states[L] when the pass filled it, else computed from the last layer's input and
  // attention (its values for every token, the row's context, then FinishLayer): in the wasm
  // build bit for bit what the full pass gives (each output of the kernels is summed in the
  // same order for one row as for n); natively within float rounding (Eigen's product for one
  // row sums in another order).
  RowMajorMatrix FinalHiddenRow(const Activations& activations, int32_t position) const;

  // Layer `layer` after its attention, for k rows on their own: LayerNorm(context W_O^T + b_O +
  // x), then the feed-forward block and its LayerNorm, into *y (k, d). context and x are (k, d):
  // a row's attention context (the heads' columns side by side, before W_O) and its layer input.
  // The rows need not be a sentence's tokens: value zeroing (core/lenses.h) runs one token's
  // row again with altered contexts. Forward does the same to each of its tokens.
  void FinishLayer(int32_t layer, const Eigen::Ref<const RowMajorMatrix>& context,
                   const Eigen::Ref<const RowMajorMatrix>& x, RowMajorMatrix* y) const;

  // Floats one forward pass over n tokens holds (activations and scratch), in 64 bits so that
  // a hostile config cannot wrap it; Forward refuses n when this exceeds
  // MemoryBudget::kMaxActivationFloats.
  static uint64_t ActivationFloats(const ModelConfig& config, int32_t n);

  // Multiply-adds x 2 of one forward pass over n tokens: the dense layers and the two
  // attention products (the FLOP count the benchmark reports).
  static double ForwardFlops(const ModelConfig& config, int32_t n);

  // The dense layers' weights packed for the matrix kernels (core/kernels.h) when the encoder
  // was made: the bytes they take beyond the model (0 where Eigen runs) and the time it took.
  size_t packed_bytes() const { return packed_bytes_; }
  double pack_milliseconds() const { return pack_ms_; }

 private:
  Status CheckIds(const std::vector<int32_t>& ids) const;
  // Sizes *out and the scratch for n tokens (a no-op when n is unchanged).
  void Resize(int32_t n, Activations* out);
  // word + position + token type 0 embeddings, then LayerNorm, into x (n, d).
  void Embed(const std::vector<int32_t>& ids, MatrixMap x) const;
  // y = LayerNorm(GELU(x W_i^T + b_i) W_o^T + b_o + x) for one layer; x, y (n, d).
  void FeedForward(const LayerWeights& w, const PackedLayer& packed, const RowMajorMatrix& x,
                   MatrixMap y);
  // Why the masked-LM head cannot score this pass at this position, or Ok.
  Status CheckMaskedLm(const Activations& activations, int32_t position) const;
  // The head's transform of the pass's final hidden state at position: dense, GELU, LayerNorm.
  RowMajorMatrix MaskedLmTransform(const Activations& activations, int32_t position) const;
  // ||W_O^h v_j|| of the layer whose values value_ holds, into norms (H, n).
  void ValueNorms(const LayerWeights& w, float* norms) const;

  const Model& model_;
  std::vector<PackedLayer> packed_;  // one per layer
  size_t packed_bytes_ = 0;
  double pack_ms_ = 0;
  // Scratch sized once per sentence length in Resize, reused by every layer.
  RowMajorMatrix value_;          // (n, d)
  RowMajorMatrix context_;        // (n, d)
  RowMajorMatrix attention_out_;  // (n, d)
  RowMajorMatrix intermediate_;   // (n, f)
};

}  // namespace attn
