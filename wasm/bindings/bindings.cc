// The embind bindings: the only file that includes Emscripten headers. It holds one loaded
// model, runs the core's AnalyzeText and hands the result to JS as typed-array views into wasm
// memory, with the field names of the result schema (docs/ARCHITECTURE.md). A view is valid
// only until the next call on the same engine (the buffers are reused), so the JS layer
// (web/engine/engine.js) copies what it keeps.
#include <emscripten/bind.h>
#include <emscripten/heap.h>
#include <emscripten/val.h>
#include <malloc.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/analysis.h"
#include "core/lenses.h"
#include "core/tensor_table.h"

namespace {

using emscripten::typed_memory_view;
using emscripten::val;

template <typename Vector>
val View(const Vector& values) {
  return val(typed_memory_view(values.size(), values.data()));
}

val ErrorObject(const std::string& message) {
  val result = val::object();
  result.set("error", message);
  return result;
}

// The names behind the enums' numbers, in enum order, so that JS can check its own constants.
val Schema() {
  val row_stats = val::array(), roles = val::array(), labels = val::array();
  for (int f = 0; f < attn::kRowStatFields; ++f) {
    row_stats.call<void>("push", std::string(attn::RowStatName(static_cast<attn::RowStatField>(f))));
  }
  for (int r = 0; r < attn::kTokenRoles; ++r) {
    roles.call<void>("push", std::string(attn::TokenRoleName(static_cast<attn::TokenRole>(r))));
  }
  for (int l = 0; l < attn::kHeadLabels; ++l) {
    labels.call<void>("push", std::string(attn::HeadLabelName(static_cast<attn::HeadLabel>(l))));
  }
  val schema = val::object();
  schema.set("row_stats", row_stats);
  schema.set("roles", roles);
  schema.set("head_labels", labels);
  schema.set("rollout_residual_weight", attn::kDefaultResidualWeight);
  return schema;
}

// The tensors a model file of this config holds, in file order (core/tensor_table.h, the one
// table): [{name, shape}], or {error} naming what is wrong with the config. The page's reader of
// Hugging Face checkpoints (web/engine/checkpoint.js) writes its model file in this order, so
// that the names and shapes are not spelled a second time in JS; and, called with the config
// alone before the weights' download, it refuses a model over this build's memory budget.
// config: an object with the ModelConfig fields under their Hugging Face names.
val ExpectedTensorList(val config, bool with_pooler, bool with_masked_lm_head) {
  auto field = [&](const char* name) -> uint32_t {
    val v = config[name];
    if (!v.isNumber()) return 0;
    double d = v.as<double>();
    return d >= 0 && d <= 4294967295.0 && d == static_cast<double>(static_cast<uint32_t>(d)) ? static_cast<uint32_t>(d) : 0;
  };
  attn::ModelConfig c;
  c.vocab_size = field("vocab_size");
  c.hidden_size = field("hidden_size");
  c.num_hidden_layers = field("num_hidden_layers");
  c.num_attention_heads = field("num_attention_heads");
  c.intermediate_size = field("intermediate_size");
  c.max_position_embeddings = field("max_position_embeddings");
  c.type_vocab_size = field("type_vocab_size");
  val eps = config["layer_norm_eps"];
  c.layer_norm_eps = eps.isNumber() ? static_cast<float>(eps.as<double>()) : 0.0f;
  attn::Status status = attn::ValidateConfig(c);
  if (!status.ok()) return ErrorObject(status.message());
  const std::vector<attn::TensorSpec> specs = attn::ExpectedTensors(c, with_pooler, with_masked_lm_head);
  // The values this build would hold (all but the pooler, which it never decodes): a model over
  // its memory budget is refused here, before the page downloads its weights.
  uint64_t floats = 0;
  for (const attn::TensorSpec& spec : specs) {
    if (spec.group != attn::TensorGroup::kPooler) floats += spec.numel();
  }
  status = attn::CheckModelBudget(floats);
  if (!status.ok()) return ErrorObject(status.message());
  val list = val::array();
  for (const attn::TensorSpec& spec : specs) {
    val shape = val::array();
    for (uint32_t k = 0; k < spec.ndim; ++k) shape.call<void>("push", spec.shape[k]);
    val entry = val::object();
    entry.set("name", spec.name);
    entry.set("shape", shape);
    list.call<void>("push", entry);
  }
  return list;
}

class Engine {
 public:
  // Returns "" on success, else the core's message unchanged. bytes arrive from a Uint8Array.
  std::string Load(const std::string& bytes) {
    std::unique_ptr<attn::LoadedModel> loaded;
    attn::Status status = attn::LoadedModel::FromBuffer(
        reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), &loaded);
    if (!status.ok()) return status.message();
    analysis_ = attn::SentenceAnalysis();
    kept_.valid = false;  // an encoding is the old model's tokenizer's
    loaded_ = std::move(loaded);
    return "";
  }

  val Info() const {
    if (!loaded_) return ErrorObject("No model is loaded.");
    const attn::Model& model = loaded_->model();
    const attn::ModelConfig& config = model.config();
    val info = val::object();
    info.set("name", model.name());
    info.set("provenance", model.provenance());
    info.set("precision", model.precision());
    info.set("file_bytes", static_cast<double>(model.file_bytes()));
    info.set("crc32", static_cast<double>(model.crc32()));
    info.set("parameters", static_cast<double>(model.parameter_count()));
    info.set("vocab_size", config.vocab_size);
    info.set("hidden", config.hidden_size);
    info.set("layers", config.num_hidden_layers);
    info.set("heads", config.num_attention_heads);
    info.set("intermediate", config.intermediate_size);
    info.set("max_positions", config.max_position_embeddings);
    info.set("has_masked_lm_head", model.weights().has_masked_lm_head);
    // The tokenizer's settings, as BertTokenizer names them (strip_accents: null, true, false).
    const attn::TokenizerOptions& t = model.tokenizer_options();
    val tokenizer = val::object();
    tokenizer.set("do_lower_case", t.lowercase);
    tokenizer.set("strip_accents", t.accents == attn::TokenizerOptions::Accents::kFollowLowercase ? val::null()
                                   : val(t.accents == attn::TokenizerOptions::Accents::kStrip));
    tokenizer.set("tokenize_chinese_chars", t.split_chinese_chars);
    info.set("tokenizer", tokenizer);
    info.set("rows_per_shard", model.rows_per_shard());  // 0: a single file
    info.set("shard_count", model.shard_count());
    info.set("loaded_shards", static_cast<double>(model.loaded_shards()));
    return info;
  }

  // outputs: the OUTPUT_* bits of the large arrays wanted (hidden states, queries, keys, value
  // norms, values with the heads' contexts, the whole rollout matrix); row statistics and head
  // profiles always come. Without OUTPUT_ROLLOUT the result has no rollout: the page computes
  // the row a reader asks for from the attention (web/engine/result.js, rolloutRow).
  // max_length <= 0 means the model's maximum.
  val Analyze(const std::string& text, int max_length, int outputs) {
    return AnalyzeAblated(text, max_length, outputs, "");
  }

  // Analyze with heads removed: removed is "L.H[,L.H...]" counted from 1 ("" removes none).
  // A removed head's attention is still reported; removed_heads marks it.
  val AnalyzeAblated(const std::string& text, int max_length, int outputs, const std::string& removed) {
    if (!loaded_) return ErrorObject("No model is loaded.");
    attn::AnalysisOptions options;
    options.max_length = max_length;
    options.outputs = attn::kEngineOutputs | (static_cast<uint32_t>(outputs) &
        (attn::kOutputHiddenStates | attn::kOutputQueries | attn::kOutputKeys | attn::kOutputValueNorms |
         attn::kOutputValues | attn::kOutputRollout));
    attn::Status status = attn::ParseHeadList(removed, loaded_->model().config(), &options.removed_heads);
    if (status.ok()) status = AnalyzeInto(text, options);
    if (!status.ok()) return ErrorObject(status.message());

    const attn::Activations& a = analysis_.activations;
    roles_.assign(analysis_.roles.size(), 0);
    for (size_t i = 0; i < roles_.size(); ++i) roles_[i] = static_cast<uint8_t>(analysis_.roles[i]);
    val result = val::object();
    result.set("tokens", TokensToJs(analysis_.encoding));
    result.set("truncated", analysis_.encoding.truncated);
    result.set("full_length", analysis_.encoding.full_length);
    result.set("n", a.tokens);
    result.set("layers", a.layers);
    result.set("heads", a.heads);
    result.set("hidden", a.hidden);
    result.set("attention", View(a.attention_probs));
    if (options.outputs & attn::kOutputRollout) {
      result.set("rollout", val(typed_memory_view(static_cast<size_t>(analysis_.rollout.size()),
                                                  analysis_.rollout.data())));
    }
    result.set("row_stats", View(analysis_.row_stats));
    result.set("roles", View(roles_));
    result.set("head_profiles", ProfilesToJs());
    if (options.outputs & attn::kOutputHiddenStates) result.set("hidden_states", View(a.hidden_states));
    if (options.outputs & attn::kOutputQueries) result.set("queries", View(a.queries));
    if (options.outputs & attn::kOutputKeys) result.set("keys", View(a.keys));
    if (options.outputs & attn::kOutputValueNorms) result.set("value_norms", View(a.value_norms));
    if (options.outputs & attn::kOutputValues) {
      result.set("values", View(a.values));
      result.set("contexts", View(a.contexts));
    }
    result.set("removed_heads", View(a.removed_heads));
    return result;
  }

  // The split layout: one shard file's bytes; "" or the core's message.
  std::string LoadShard(const std::string& bytes) {
    if (!loaded_) return "No model is loaded.";
    attn::Status status = loaded_->LoadShard(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    return status.ok() ? "" : status.message();
  }

  // The all-rows file (every shard back to back): "" when it loaded and every row is now in,
  // else why not.
  std::string LoadShards(const std::string& bytes) {
    if (!loaded_) return "No model is loaded.";
    int32_t count = 0;
    attn::Status status = loaded_->LoadShards(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), &count);
    if (!status.ok()) return status.message();
    const attn::Model& model = loaded_->model();
    if (!model.AllRowsLoaded()) {
      return "the all-rows file holds " + std::to_string(count) + " shards; the core has " +
             std::to_string(model.shard_count()) + " and " + std::to_string(model.shard_count() - static_cast<int32_t>(model.loaded_shards())) +
             " are still missing";
    }
    return "";
  }

  // The shards a text's tokens need that are not loaded yet, in increasing order. The page asks
  // this of a text and then analyses it: the encoding made here is kept for that analysis.
  val MissingShards(const std::string& text, int max_length) {
    val list = val::array();
    if (!loaded_) return list;
    kept_.text = text;
    kept_.max_length = loaded_->MaxLength(max_length);
    kept_.encoding = loaded_->tokenizer().Encode(text, kept_.max_length);
    kept_.valid = true;
    for (int32_t k : loaded_->MissingShards(kept_.encoding)) list.call<void>("push", k);
    return list;
  }

  // The analysis of text into analysis_, from the encoding MissingShards kept where it is this
  // text's at the same length (used once), else tokenizing it.
  attn::Status AnalyzeInto(const std::string& text, const attn::AnalysisOptions& options) {
    const bool kept = kept_.valid && kept_.text == text && kept_.max_length == loaded_->MaxLength(options.max_length);
    kept_.valid = false;
    return kept ? attn::AnalyzeEncoding(*loaded_, std::move(kept_.encoding), options, &analysis_)
                : attn::AnalyzeText(*loaded_, text, options, &analysis_);
  }

  // The tokenizer alone: {tokens, truncated, full_length}, as analyze reports them.
  val Tokenize(const std::string& text, int max_length) {
    if (!loaded_) return ErrorObject("No model is loaded.");
    const attn::Encoding encoding = loaded_->tokenizer().Encode(text, loaded_->MaxLength(max_length));
    val result = val::object();
    result.set("tokens", TokensToJs(encoding));
    result.set("truncated", encoding.truncated);
    result.set("full_length", encoding.full_length);
    return result;
  }

  // The model's vocabulary, one entry per id.
  val Vocabulary() const {
    if (!loaded_) return ErrorObject("No model is loaded.");
    const attn::Vocab& vocab = loaded_->tokenizer().vocab();
    val list = val::array();
    for (int32_t id = 0; id < vocab.size(); ++id) list.call<void>("push", vocab.piece(id));
    return list;
  }

  // The masked-LM head's k best tokens at one position of text, analysed again with that
  // position replaced by [MASK] (when masked) and heads removed ("L.H,..." counted from 1).
  val PredictMasked(const std::string& text, int position, int k, bool masked, const std::string& removed) {
    if (!loaded_) return ErrorObject("No model is loaded.");
    attn::Status status = AnalyzeForPrediction(text, position, masked, removed);
    if (!status.ok()) return ErrorObject(status.message());
    return TopPredictions(position, k);
  }

  // The exact probability of entry id at one position of text (analysed as PredictMasked does),
  // over the whole vocabulary: {probability, rank (from 1), top1 and top1_text (the most
  // probable entry)}.
  val ProbabilityMasked(const std::string& text, int position, int id, bool masked, const std::string& removed) {
    if (!loaded_) return ErrorObject("No model is loaded.");
    attn::Status status = AnalyzeForPrediction(text, position, masked, removed);
    attn::LoadedModel::EntryProbability p;
    if (status.ok()) status = loaded_->ProbabilityOf(analysis_, position, id, &p);
    if (!status.ok()) return ErrorObject(status.message());
    val result = val::object();
    result.set("probability", p.probability);
    result.set("rank", p.rank);
    result.set("top1", p.top1);
    result.set("top1_text", loaded_->tokenizer().vocab().piece(p.top1));
    return result;
  }

  // The analysis a prediction reads: text with `position` masked (when masked) and the heads in
  // `removed` ("L.H,..." counted from 1) removed, into analysis_.
  attn::Status AnalyzeForPrediction(const std::string& text, int position, bool masked, const std::string& removed) {
    attn::AnalysisOptions options;
    options.outputs = 0;
    if (masked) options.masked_positions.push_back(position);
    attn::Status status = attn::ParseHeadList(removed, loaded_->model().config(), &options.removed_heads);
    return status.ok() ? AnalyzeInto(text, options) : status;
  }

  // The masked-LM head's k best tokens for one position of the last analyze call.
  val TopPredictions(int position, int k) const {
    if (!loaded_) return ErrorObject("No model is loaded.");
    std::vector<attn::Prediction> predictions;
    attn::Status status = loaded_->TopPredictions(analysis_, position, k, &predictions);
    if (!status.ok()) return ErrorObject(status.message());
    val list = val::array();
    for (const attn::Prediction& p : predictions) {
      val item = val::object();
      item.set("id", p.id);
      item.set("text", p.text);
      item.set("probability", p.probability);
      list.call<void>("push", item);
    }
    return list;
  }

  // The lenses of core/lenses.h on text, analysed again with its values kept (`masked`: a
  // position replaced by [MASK] first, -1 for none): weighted (L, H, n, n), weighted_layer,
  // mixing and alti (L, n, n), mixing_ratio (L, n), alti_rollout and rollout (n, n); with a
  // token `row` (not -1), that token's rows only: weighted (L, H, n), weighted_layer, mixing and
  // alti (L, n), mixing_ratio (L), no alti_rollout; the rows
  // flow_row of flow and flow_normalized (n each) and zeroing_row of value zeroing (L, n), -1
  // for none; and with a target position, occlusion (n, NaN where undefined), target_top1,
  // target_top1_text, target_logprob and faithfulness {lens name: Spearman rho or NaN}.
  val Lenses(const std::string& text, int masked, int target, int row, int flow_row, int zeroing_row) {
    if (!loaded_) return ErrorObject("No model is loaded.");
    attn::AnalysisOptions options;
    options.outputs = attn::kOutputValues;
    if (masked >= 0) options.masked_positions.push_back(masked);
    attn::LensOptions lens;
    lens.target = target;
    if (row >= 0) lens.rows = {row};
    if (flow_row >= 0) lens.flow_rows = {flow_row};
    if (zeroing_row >= 0) lens.value_zeroing_rows = {zeroing_row};
    attn::Status status = AnalyzeInto(text, options);
    if (status.ok()) status = attn::ComputeLenses(*loaded_, analysis_, lens, &lenses_);
    if (!status.ok()) return ErrorObject(status.message());
    const attn::Lenses& l = lenses_;
    const size_t n = static_cast<size_t>(l.tokens), nn = n * n, L = static_cast<size_t>(l.layers),
                 H = static_cast<size_t>(l.heads);
    val result = val::object();
    result.set("n", l.tokens);
    result.set("layers", l.layers);
    result.set("heads", l.heads);
    result.set("masked", masked);
    result.set("row", row);
    if (row < 0) {
      result.set("weighted", View(l.weighted));
      result.set("weighted_layer", View(l.weighted_layer));
      result.set("mixing", View(l.mixing));
      result.set("mixing_ratio", View(l.mixing_ratio));
      result.set("alti", View(l.alti));
      result.set("alti_rollout", View(l.alti_rollout));
    } else {
      // One token's rows only, so that a long sentence does not send L H n^2 numbers for the n it
      // shows: weighted (L, H, n), weighted_layer, mixing and alti (L, n), mixing_ratio (L).
      const size_t r = static_cast<size_t>(row);
      rows_.assign((L * H + 3 * L) * n + L, 0.0f);
      float* out = rows_.data();
      auto copy_row = [&](const std::vector<float>& from, size_t block) {
        std::copy(from.begin() + static_cast<std::ptrdiff_t>(block * nn + r * n),
                  from.begin() + static_cast<std::ptrdiff_t>(block * nn + r * n + n), out);
        out += n;
      };
      const float* start = out;
      for (size_t k = 0; k < L * H; ++k) copy_row(l.weighted, k);
      result.set("weighted", val(typed_memory_view(L * H * n, start)));
      for (const auto* array : {&l.weighted_layer, &l.mixing, &l.alti}) {
        start = out;
        for (size_t k = 0; k < L; ++k) copy_row(*array, k);
        result.set(array == &l.weighted_layer ? "weighted_layer" : array == &l.mixing ? "mixing" : "alti",
                   val(typed_memory_view(L * n, start)));
      }
      for (size_t k = 0; k < L; ++k) out[k] = l.mixing_ratio[k * n + r];
      result.set("mixing_ratio", val(typed_memory_view(L, out)));
    }
    result.set("rollout", View(l.rollout));
    result.set("flow_row", flow_row);
    if (flow_row >= 0) {
      result.set("flow", val(typed_memory_view(n, l.flow.data() + static_cast<size_t>(flow_row) * n)));
      result.set("flow_normalized", val(typed_memory_view(n, l.flow_normalized.data() + static_cast<size_t>(flow_row) * n)));
    }
    result.set("zeroing_row", zeroing_row);
    if (zeroing_row >= 0) {
      zeroing_.resize(static_cast<size_t>(l.layers) * n);
      for (size_t k = 0; k < static_cast<size_t>(l.layers); ++k) {
        const float* row = l.value_zeroing.data() + k * nn + static_cast<size_t>(zeroing_row) * n;
        std::copy(row, row + n, zeroing_.begin() + static_cast<std::ptrdiff_t>(k * n));
      }
      result.set("value_zeroing", View(zeroing_));
    }
    result.set("target", l.target);
    if (l.target >= 0) {
      result.set("target_top1", l.target_top1);
      result.set("target_top1_text", loaded_->tokenizer().vocab().piece(l.target_top1));
      result.set("target_logprob", l.target_logprob);
      result.set("occlusion", View(l.occlusion));
      val faithfulness = val::object();
      for (int k = 0; k < attn::kFaithfulnessLenses; ++k) {
        faithfulness.set(attn::FaithfulnessLensName(static_cast<attn::FaithfulnessLens>(k)), l.faithfulness[k]);
      }
      result.set("faithfulness", faithfulness);
    }
    return result;
  }

  // Memory figures for the leak test: bytes malloc has handed out and not had back, and the
  // size of the wasm memory (which only ever grows).
  val MemoryInfo() const {
    val info = val::object();
    info.set("allocated_bytes", static_cast<double>(mallinfo().uordblks));
    info.set("heap_bytes", static_cast<double>(emscripten_get_heap_size()));
    return info;
  }

#if ATTN_TEST_HOOKS
  // Executes wasm's `unreachable`, a real trap of this instance, as an out-of-bounds access or an
  // abort would be: the browser test of the page's recovery (tests/browser/recovery.test.mjs)
  // forces one with it. Only the test build has it (CMake option ATTN_TEST_HOOKS, preset
  // wasm-test); the engine the site ships cannot be made to trap on purpose.
  void Trap() const { __builtin_trap(); }
#endif

 private:
  static val TokensToJs(const attn::Encoding& encoding) {
    val list = val::array();
    for (const attn::Token& token : encoding.tokens) {
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

  val ProfilesToJs() const {
    val list = val::array();
    const int32_t heads = analysis_.activations.heads;
    for (size_t k = 0; k < analysis_.head_profiles.size(); ++k) {
      const attn::HeadProfile& p = analysis_.head_profiles[k];
      val item = val::object();
      item.set("layer", static_cast<int>(k / static_cast<size_t>(heads)));
      item.set("head", static_cast<int>(k % static_cast<size_t>(heads)));
      item.set("label", std::string(attn::HeadLabelName(p.Label())));
      for (const auto& [name, value] : attn::HeadProfileFractions(p)) item.set(name, value);
      // The counts behind the fractions, by the core's names (the posts show shares of them).
      val counts = val::object();
      for (const auto& [name, count] : attn::HeadProfileCounts(p)) counts.set(name, static_cast<double>(count));
      counts.set("normalized_entropy_sum", p.normalized_entropy_sum);
      item.set("counts", counts);
      list.call<void>("push", item);
    }
    return list;
  }

  std::unique_ptr<attn::LoadedModel> loaded_;
  // Reused by every Analyze call; the typed-array views point into these.
  attn::SentenceAnalysis analysis_;
  std::vector<uint8_t> roles_;  // (n)
  attn::Lenses lenses_;
  std::vector<float> zeroing_;  // (L, n): one row of value zeroing in every layer
  std::vector<float> rows_;     // one token's rows of the per-layer lenses (Lenses(..., row, ...))
  // The encoding of the last text MissingShards was asked about, for that text's analysis.
  struct KeptEncoding {
    std::string text;
    int32_t max_length = 0;
    attn::Encoding encoding;
    bool valid = false;
  } kept_;
};

}  // namespace

EMSCRIPTEN_BINDINGS(attention_engine) {
  emscripten::constant("ROW_STAT_FIELDS", attn::kRowStatFields);
  emscripten::constant("OUTPUT_HIDDEN_STATES", static_cast<int>(attn::kOutputHiddenStates));
  emscripten::constant("OUTPUT_QUERIES", static_cast<int>(attn::kOutputQueries));
  emscripten::constant("OUTPUT_KEYS", static_cast<int>(attn::kOutputKeys));
  emscripten::constant("OUTPUT_VALUE_NORMS", static_cast<int>(attn::kOutputValueNorms));
  emscripten::constant("OUTPUT_VALUES", static_cast<int>(attn::kOutputValues));
  emscripten::constant("OUTPUT_ROLLOUT", static_cast<int>(attn::kOutputRollout));
  emscripten::function("schema", &Schema);
  emscripten::function("expectedTensors", &ExpectedTensorList);
  emscripten::class_<Engine>("Engine")
      .constructor<>()
      .function("load", &Engine::Load)
      .function("info", &Engine::Info)
      .function("analyze", &Engine::Analyze)
      .function("analyzeAblated", &Engine::AnalyzeAblated)
      .function("tokenize", &Engine::Tokenize)
      .function("loadShard", &Engine::LoadShard)
      .function("loadShards", &Engine::LoadShards)
      .function("missingShards", &Engine::MissingShards)
      .function("vocabulary", &Engine::Vocabulary)
      .function("topPredictions", &Engine::TopPredictions)
      .function("predictMasked", &Engine::PredictMasked)
      .function("probabilityMasked", &Engine::ProbabilityMasked)
      .function("lenses", &Engine::Lenses)
      .function("memoryInfo", &Engine::MemoryInfo)
#if ATTN_TEST_HOOKS
      .function("trap", &Engine::Trap)
#endif
      ;
}
