// attention-cli compare: how far a model file's attention lies from a reference file's, over a
// set of sentences. This is what the precision study and the compact-model test measure.
//
//   attention-cli compare --reference REF.attn --model FILE [--model FILE ...] --sentences FILE
//                         [--mask-every K]
//
// Every non-empty line of the sentences file is one sentence. For each --model, one JSON line:
//   {"model", "file_bytes", "precision", "sentences", "rows", "attention_max_abs",
//    "attention_mean_abs", "argmax_changed_rows", "argmax_changed_share", "rollout_max_abs",
//    "masked_positions", "masked_lm_top1_agreement", "worst": {"sentence","layer","head","row"}}
// attention_* compare every probability of every layer, head and row; argmax_changed_rows counts
// rows whose largest weight moved to another token. For the masked-LM agreement each sentence is
// run again with every K-th position replaced by [MASK] (positions p with p % K == K / 2, never
// [CLS] or [SEP]) and the top-1 prediction at those positions is compared (null when the
// reference has no masked-LM head).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/json.h"
#include "cli/text.h"
#include "core/analysis.h"

namespace attn::cli {
namespace {

constexpr const char* kUsage =
    "usage: attention-cli compare --reference REF.attn --model FILE [--model FILE ...] "
    "--sentences FILE [--mask-every K]\n"
    "  prints one JSON line per --model: attention and rollout differences from REF, argmax\n"
    "  changes and masked-LM top-1 agreement over the sentences (one per line).\n";

struct Options {
  std::string reference_path, sentences_path;
  std::vector<std::string> model_paths;
  int mask_every = 7;
};

int ParseOptions(int argc, char** argv, Options* options) {
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--reference" && has_value) {
      options->reference_path = argv[++i];
    } else if (arg == "--model" && has_value) {
      options->model_paths.push_back(argv[++i]);
    } else if (arg == "--sentences" && has_value) {
      options->sentences_path = argv[++i];
    } else if (arg == "--mask-every" && has_value) {
      long k = 0;
      if (!ParseInteger(argv[++i], 2, 1000, &k)) {
        std::fprintf(stderr, "attention-cli compare: --mask-every needs an integer in [2, 1000], "
                             "got '%s'.\n%s", argv[i], kUsage);
        return 2;
      }
      options->mask_every = static_cast<int>(k);
    } else {
      std::fprintf(stderr, "attention-cli compare: unknown or incomplete argument '%s'.\n%s",
                   arg.c_str(), kUsage);
      return 2;
    }
  }
  if (options->reference_path.empty() || options->model_paths.empty() ||
      options->sentences_path.empty()) {
    std::fprintf(stderr, "attention-cli compare: --reference, --model and --sentences are "
                         "required.\n%s", kUsage);
    return 2;
  }
  return 0;
}

// Running totals of one candidate against the reference.
struct Comparison {
  double attention_max_abs = 0.0, attention_sum_abs = 0.0, rollout_max_abs = 0.0;
  uint64_t attention_values = 0, rows = 0, argmax_changed_rows = 0;
  uint64_t masked_positions = 0, masked_agreements = 0;
  int worst_sentence = -1, worst_layer = -1, worst_head = -1, worst_row = -1;
};

int32_t ArgMax(const float* values, int32_t count) {
  return static_cast<int32_t>(std::max_element(values, values + count) - values);
}

void AddAttention(const SentenceAnalysis& want_analysis, const SentenceAnalysis& got_analysis,
                  int sentence, Comparison* c) {
  const Activations& reference = want_analysis.activations;
  const Activations& candidate = got_analysis.activations;
  const int32_t n = reference.tokens;
  for (int32_t l = 0; l < reference.layers; ++l) {
    for (int32_t h = 0; h < reference.heads; ++h) {
      for (int32_t i = 0; i < n; ++i) {
        const float* want = reference.AttentionRow(l, h, i);
        const float* got = candidate.AttentionRow(l, h, i);
        for (int32_t j = 0; j < n; ++j) {
          const double diff = std::fabs(static_cast<double>(got[j]) - want[j]);
          c->attention_sum_abs += diff;
          if (diff > c->attention_max_abs) {
            c->attention_max_abs = diff;
            c->worst_sentence = sentence;
            c->worst_layer = l;
            c->worst_head = h;
            c->worst_row = i;
          }
        }
        c->attention_values += static_cast<uint64_t>(n);
        c->rows += 1;
        if (ArgMax(want, n) != ArgMax(got, n)) c->argmax_changed_rows += 1;
      }
    }
  }
  c->rollout_max_abs = std::max(
      c->rollout_max_abs,
      static_cast<double>((want_analysis.rollout - got_analysis.rollout).cwiseAbs().maxCoeff()));
}

void WriteResult(FILE* out, const std::string& path, const Model& model, size_t sentences,
                 bool masked_lm, const Comparison& c) {
  std::fputs("{\"model\":", out);
  WriteJsonString(out, path);
  std::fprintf(out, ",\"file_bytes\":%llu,\"precision\":",
               static_cast<unsigned long long>(model.file_bytes()));
  WriteJsonString(out, model.precision());
  std::fprintf(out, ",\"sentences\":%zu,\"rows\":%llu", sentences,
               static_cast<unsigned long long>(c.rows));
  // The differences are null, not "nan", where a model's weights overflowed (json.h).
  std::fputs(",\"attention_max_abs\":", out);
  WriteJsonNumber(out, c.attention_max_abs, 9);
  std::fputs(",\"attention_mean_abs\":", out);
  WriteJsonNumber(out, c.attention_values ? c.attention_sum_abs / static_cast<double>(c.attention_values) : 0.0, 9);
  std::fprintf(out, ",\"argmax_changed_rows\":%llu,\"argmax_changed_share\":",
               static_cast<unsigned long long>(c.argmax_changed_rows));
  WriteJsonNumber(out, c.rows ? static_cast<double>(c.argmax_changed_rows) / static_cast<double>(c.rows) : 0.0, 9);
  std::fputs(",\"rollout_max_abs\":", out);
  WriteJsonNumber(out, c.rollout_max_abs, 9);
  std::fprintf(out, ",\"masked_positions\":%llu,\"masked_lm_top1_agreement\":",
               static_cast<unsigned long long>(c.masked_positions));
  if (masked_lm && c.masked_positions > 0) {
    WriteJsonNumber(out, static_cast<double>(c.masked_agreements) / static_cast<double>(c.masked_positions), 9);
  } else {
    std::fputs("null", out);
  }
  std::fprintf(out, ",\"worst\":{\"sentence\":%d,\"layer\":%d,\"head\":%d,\"row\":%d}}\n",
               c.worst_sentence, c.worst_layer, c.worst_head, c.worst_row);
}

}  // namespace

namespace {

// The masked-LM head's top-1 entry at each masked position of an analysis.
Status TopOnes(const LoadedModel& model, const SentenceAnalysis& analysis,
               const std::vector<int32_t>& positions, std::vector<int32_t>* ids) {
  ids->clear();
  std::vector<Prediction> best;
  for (int32_t p : positions) {
    Status status = model.TopPredictions(analysis, p, 1, &best);
    if (!status.ok()) return status;
    ids->push_back(best[0].id);
  }
  return Status::Ok();
}

}  // namespace

int RunCompare(int argc, char** argv) {
  Options options;
  if (int code = ParseOptions(argc, argv, &options)) return code;
  auto fail = [](const std::string& message) {
    std::fprintf(stderr, "attention-cli compare: %s\n", Printable(message).c_str());
    return 1;
  };

  std::unique_ptr<LoadedModel> reference;
  Status status = LoadedModel::FromFile(options.reference_path, &reference);
  if (!status.ok()) return fail(status.message());
  std::vector<std::unique_ptr<LoadedModel>> models(options.model_paths.size());
  for (size_t k = 0; k < models.size(); ++k) {
    status = LoadedModel::FromFile(options.model_paths[k], &models[k]);
    if (!status.ok()) return fail(status.message());
    const ModelConfig& a = reference->model().config();
    const ModelConfig& b = models[k]->model().config();
    if (a.vocab_size != b.vocab_size || a.hidden_size != b.hidden_size ||
        a.num_hidden_layers != b.num_hidden_layers || a.num_attention_heads != b.num_attention_heads ||
        a.intermediate_size != b.intermediate_size ||
        a.max_position_embeddings != b.max_position_embeddings ||
        models[k]->model().vocab_text() != reference->model().vocab_text()) {
      return fail(options.model_paths[k] + " has another config or vocabulary than the reference " +
                  options.reference_path + "; compare only precisions of the same model");
    }
  }

  std::ifstream in(options.sentences_path);
  if (!in) return fail("cannot open sentences file '" + options.sentences_path + "'");
  std::vector<std::string> sentences;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) sentences.push_back(line);
  }
  if (sentences.empty()) return fail("no sentences in '" + options.sentences_path + "'");

  const bool masked_lm = reference->model().weights().has_masked_lm_head &&
                         std::all_of(models.begin(), models.end(), [](const auto& m) {
                           return m->model().weights().has_masked_lm_head;
                         });
  std::vector<Comparison> results(models.size());
  // Attention and rollout only: the statistics and profiles are not compared.
  AnalysisOptions plain;
  plain.outputs = kOutputRollout;
  SentenceAnalysis want, got;
  std::vector<int32_t> want_top1, got_top1;
  auto on_sentence = [](size_t s, const Status& status) {
    return "sentence " + std::to_string(s + 1) + ": " + status.message();
  };
  for (size_t s = 0; s < sentences.size(); ++s) {
    status = AnalyzeText(*reference, sentences[s], plain, &want);
    if (!status.ok()) return fail(on_sentence(s, status));
    for (size_t k = 0; k < models.size(); ++k) {
      status = AnalyzeText(*models[k], sentences[s], plain, &got);
      if (!status.ok()) return fail(on_sentence(s, status));
      AddAttention(want, got, static_cast<int>(s), &results[k]);
    }
    if (!masked_lm) continue;

    AnalysisOptions masked = plain;
    // Every masked position is scored: the pass keeps its final hidden states for all of them.
    masked.outputs = kOutputHiddenStates;
    for (int32_t p = 1; p + 1 < want.tokens(); ++p) {
      if (p % options.mask_every == options.mask_every / 2) masked.masked_positions.push_back(p);
    }
    if (masked.masked_positions.empty()) continue;
    status = AnalyzeText(*reference, sentences[s], masked, &want);
    if (status.ok()) status = TopOnes(*reference, want, masked.masked_positions, &want_top1);
    if (!status.ok()) return fail(on_sentence(s, status));
    for (size_t k = 0; k < models.size(); ++k) {
      status = AnalyzeText(*models[k], sentences[s], masked, &got);
      if (status.ok()) status = TopOnes(*models[k], got, masked.masked_positions, &got_top1);
      if (!status.ok()) return fail(on_sentence(s, status));
      for (size_t m = 0; m < want_top1.size(); ++m) {
        results[k].masked_positions += 1;
        results[k].masked_agreements += got_top1[m] == want_top1[m];
      }
    }
  }
  for (size_t k = 0; k < models.size(); ++k) {
    WriteResult(stdout, options.model_paths[k], models[k]->model(), sentences.size(), masked_lm,
                results[k]);
  }
  return std::fflush(stdout) == 0 ? 0 : 1;
}

}  // namespace attn::cli
