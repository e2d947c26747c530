// The embind bindings: the only file that includes Emscripten headers. It holds one loaded
// model and hands the core's results to JS as typed-array views into wasm memory. A view is
// valid only until the next call on the same engine (the buffers are reused), so the JS layer
// (web/engine/engine.js) copies what it keeps.
#include <emscripten/bind.h>
#include <emscripten/heap.h>
#include <emscripten/val.h>
#include <malloc.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/analysis.h"
#include "core/encoder.h"
#include "core/model_file.h"
#include "core/tokenizer.h"

namespace {

using emscripten::typed_memory_view;
using emscripten::val;

// Row statistics are packed for JS as kRowStatFields floats per row, in this order.
constexpr int kRowStatFields = 6;  // max, argmax, ratio_to_uniform, entropy, normalized, sum

template <typename T>
val View(const std::vector<T>& values) {
  return val(typed_memory_view(values.size(), values.data()));
}

val ErrorObject(const std::string& message) {
  val result = val::object();
  result.set("error", message);
  return result;
}

class Engine {
 public:
  // Returns "" on success, else the core's message unchanged. bytes arrive from a Uint8Array.
  std::string Load(const std::string& bytes) {
    std::unique_ptr<attn::Model> model;
    attn::Status status = attn::Model::FromBuffer(
        reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), &model);
    if (!status.ok()) return status.message();
    attn::Vocab vocab;
    status = attn::Vocab::FromText(model->vocab_text(), &vocab);
    if (!status.ok()) return status.message();
    attn::Tokenizer tokenizer;
    status = attn::Tokenizer::Create(std::move(vocab), &tokenizer);
    if (!status.ok()) return status.message();
    encoder_.reset();
    model_ = std::move(model);
    tokenizer_ = std::move(tokenizer);
    encoder_ = std::make_unique<attn::Encoder>(*model_);
    return "";
  }

  val Info() const {
    if (!model_) return ErrorObject("No model is loaded.");
    const attn::ModelConfig& config = model_->config();
    val info = val::object();
    info.set("name", model_->name());
    info.set("provenance", model_->provenance());
    info.set("precision", model_->precision());
    info.set("fileBytes", static_cast<double>(model_->file_bytes()));
    info.set("crc32", static_cast<double>(model_->crc32()));
    info.set("parameters", static_cast<double>(model_->parameter_count()));
    info.set("vocabSize", config.vocab_size);
    info.set("hidden", config.hidden_size);
    info.set("layers", config.num_hidden_layers);
    info.set("heads", config.num_attention_heads);
    info.set("intermediate", config.intermediate_size);
    info.set("maxPositions", config.max_position_embeddings);
    info.set("hasMaskedLmHead", model_->weights().has_masked_lm_head);
    return info;
  }

  // Tokenizes and runs the forward pass and the analysis. max_length <= 0 means the model's
  // max positions.
  val Analyze(const std::string& text, int max_length) {
    if (!model_) return ErrorObject("No model is loaded.");
    const int32_t positions = static_cast<int32_t>(model_->config().max_position_embeddings);
    if (max_length <= 0 || max_length > positions) max_length = positions;
    if (max_length < 2) return ErrorObject("max_length must leave room for [CLS] and [SEP].");
    encoding_ = tokenizer_.Encode(text, max_length);
    ids_.clear();
    for (const attn::Token& token : encoding_.tokens) ids_.push_back(token.id);
    attn::Status status = encoder_->Forward(ids_, &activations_);
    if (!status.ok()) return ErrorObject(status.message());

    const int32_t n = activations_.tokens, layers = activations_.layers,
                  heads = activations_.heads;
    roles_ = attn::TokenRoles(encoding_.tokens, tokenizer_);
    roles_bytes_.clear();
    for (attn::TokenRole role : roles_) roles_bytes_.push_back(static_cast<uint8_t>(role));

    head_average_.assign(static_cast<size_t>(layers) * n * n, 0.0f);
    std::vector<attn::RowMajorMatrix> averaged;
    averaged.reserve(static_cast<size_t>(layers));
    for (int32_t l = 0; l < layers; ++l) {
      averaged.push_back(attn::HeadAverage(activations_, l));
      std::copy(averaged.back().data(), averaged.back().data() + n * n,
                head_average_.begin() + static_cast<std::ptrdiff_t>(l) * n * n);
    }
    attn::RowMajorMatrix rollout = attn::Rollout(averaged);
    rollout_.assign(rollout.data(), rollout.data() + rollout.size());

    row_stats_.assign(static_cast<size_t>(layers) * heads * n * kRowStatFields, 0.0f);
    float* out = row_stats_.data();
    for (int32_t l = 0; l < layers; ++l) {
      for (int32_t h = 0; h < heads; ++h) {
        for (const attn::RowStats& s : attn::ComputeRowStats(activations_, l, h)) {
          *out++ = s.max;
          *out++ = static_cast<float>(s.argmax);
          *out++ = s.ratio_to_uniform;
          *out++ = s.entropy;
          *out++ = s.normalized_entropy;
          *out++ = s.sum;
        }
      }
    }

    std::vector<attn::HeadProfile> profiles;
    status = attn::AccumulateHeadProfiles(activations_, roles_, &profiles);
    if (!status.ok()) return ErrorObject(status.message());

    val result = val::object();
    result.set("tokens", TokensToJs());
    result.set("truncated", encoding_.truncated);
    result.set("fullLength", encoding_.full_length);
    result.set("n", n);
    result.set("layers", layers);
    result.set("heads", heads);
    result.set("hidden", activations_.hidden);
    result.set("attention", View(activations_.attention_probs));
    result.set("headAverage", View(head_average_));
    result.set("rollout", View(rollout_));
    result.set("rowStats", View(row_stats_));
    result.set("roles", View(roles_bytes_));
    result.set("hiddenStates", View(activations_.hidden_states));
    result.set("queries", View(activations_.queries));
    result.set("keys", View(activations_.keys));
    result.set("headProfiles", ProfilesToJs(profiles));
    return result;
  }

  // The masked-LM head's k best tokens for one position of the last analyze call.
  val TopPredictions(int position, int k) const {
    if (!model_) return ErrorObject("No model is loaded.");
    std::vector<float> logits;
    attn::Status status = encoder_->MaskedLmLogits(activations_, position, &logits);
    if (!status.ok()) return ErrorObject(status.message());
    std::vector<int32_t> order(logits.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int32_t>(i);
    k = std::max(1, std::min<int>(k, static_cast<int>(order.size())));
    std::partial_sort(order.begin(), order.begin() + k, order.end(),
                      [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
    float max_logit = logits[static_cast<size_t>(order[0])];
    double total = 0;
    for (float z : logits) total += std::exp(static_cast<double>(z - max_logit));
    val list = val::array();
    for (int i = 0; i < k; ++i) {
      const int32_t id = order[static_cast<size_t>(i)];
      val item = val::object();
      item.set("id", id);
      item.set("text", tokenizer_.vocab().piece(id));
      item.set("probability",
               std::exp(static_cast<double>(logits[static_cast<size_t>(id)] - max_logit)) / total);
      list.call<void>("push", item);
    }
    return list;
  }

  // Memory figures for the leak test: bytes malloc has handed out and not had back, and the
  // size of the wasm memory (which only ever grows).
  val MemoryInfo() const {
    val info = val::object();
    info.set("allocatedBytes", static_cast<double>(mallinfo().uordblks));
    info.set("heapBytes", static_cast<double>(emscripten_get_heap_size()));
    return info;
  }

 private:
  val TokensToJs() const {
    val list = val::array();
    for (const attn::Token& token : encoding_.tokens) {
      val item = val::object();
      item.set("id", token.id);
      item.set("text", token.text);
      item.set("start", token.start);
      item.set("end", token.end);
      item.set("word", token.word);
      list.call<void>("push", item);
    }
    return list;
  }

  static val ProfilesToJs(const std::vector<attn::HeadProfile>& profiles) {
    val list = val::array();
    for (const attn::HeadProfile& p : profiles) {
      val item = val::object();
      item.set("label", std::string(attn::HeadLabelName(p.Label())));
      item.set("previousToken", p.Fraction(p.previous_token));
      item.set("nextToken", p.Fraction(p.next_token));
      item.set("cls", p.Fraction(p.cls));
      item.set("sep", p.Fraction(p.sep));
      item.set("self", p.Fraction(p.self));
      item.set("punctuation", p.Fraction(p.punctuation));
      item.set("meanEntropy", p.mean_entropy());
      item.set("meanNormalizedEntropy", p.mean_normalized_entropy());
      item.set("meanRatioToUniform", p.mean_ratio_to_uniform());
      list.call<void>("push", item);
    }
    return list;
  }

  std::unique_ptr<attn::Model> model_;
  attn::Tokenizer tokenizer_;
  std::unique_ptr<attn::Encoder> encoder_;
  // Reused by every Analyze call; the typed-array views point into these.
  attn::Encoding encoding_;
  std::vector<int32_t> ids_;            // (n)
  attn::Activations activations_;
  std::vector<attn::TokenRole> roles_;  // (n)
  std::vector<uint8_t> roles_bytes_;    // (n)
  std::vector<float> head_average_;     // (L, n, n)
  std::vector<float> rollout_;          // (n, n)
  std::vector<float> row_stats_;        // (L, H, n, kRowStatFields)
};

}  // namespace

EMSCRIPTEN_BINDINGS(attention_engine) {
  emscripten::constant("ROW_STAT_FIELDS", kRowStatFields);
  emscripten::class_<Engine>("Engine")
      .constructor<>()
      .function("load", &Engine::Load)
      .function("info", &Engine::Info)
      .function("analyze", &Engine::Analyze)
      .function("topPredictions", &Engine::TopPredictions)
      .function("memoryInfo", &Engine::MemoryInfo);
}
