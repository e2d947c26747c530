// attention-cli analyze: the core's AnalyzeText on one text, printed as the JSON object of the
// result schema (--json; docs/ARCHITECTURE.md) or as a readable summary.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/json.h"
#include "cli/shards.h"
#include "cli/text.h"
#include "core/analysis.h"

namespace attn::cli {
namespace {

constexpr const char* kUsage =
    "usage: attention-cli analyze --model FILE [--shards DIR|FILE] [--json] [--ablate L.H[,L.H...]] [--hidden] "
    "[--layer L --head H --word I] [--residual R] TEXT|-\n"
    "  --json      print {model, tokens, attention[l][h][i][j], rollout, head_profiles}\n"
    "  --ablate    remove these heads (counted from 1, as on the page): their probabilities\n"
    "              times 0 before the output projection; their attention is still reported\n"
    "  --hidden    (--json) add \"hidden\": [n][d], the last layer's hidden states\n"
    "  --shards    the folder of a split model's shard files, or its all-rows file (--model is its core file)\n"
    "  --layer/--head/--word  (readable mode) show row I of head (L, H) with bars\n"
    "  --residual  rollout residual weight r in [0, 1] (default 0.5)\n"
    "  TEXT '-' reads standard input.\n";

struct Options {
  std::string model_path;
  std::string text;
  bool json = false, hidden = false;
  std::string ablate, shards;
  int layer = 0, head = 0, word = -1;
  double residual = kDefaultResidualWeight;
};

bool ParseInt(const char* s, int* out) {
  long v = 0;
  if (!ParseInteger(s, -1000000, 1000000, &v)) return false;
  *out = static_cast<int>(v);
  return true;
}

// Returns 0 when parsed, else the exit code (usage errors are 2).
int ParseOptions(int argc, char** argv, Options* options) {
  bool have_text = false;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--json") {
      options->json = true;
    } else if (arg == "--hidden") {
      options->hidden = true;
    } else if (arg == "--ablate" && has_value) {
      options->ablate = argv[++i];
    } else if (arg == "--shards" && has_value) {
      options->shards = argv[++i];
    } else if (arg == "--model" && has_value) {
      options->model_path = argv[++i];
    } else if ((arg == "--layer" || arg == "--head" || arg == "--word") && has_value) {
      int* target = arg == "--layer" ? &options->layer : arg == "--head" ? &options->head : &options->word;
      if (!ParseInt(argv[++i], target)) {
        std::fprintf(stderr, "attention-cli analyze: %s needs an integer, got '%s'.\n%s",
                     arg.c_str(), argv[i], kUsage);
        return 2;
      }
    } else if (arg == "--residual" && has_value) {
      char* end = nullptr;
      options->residual = std::strtod(argv[++i], &end);
      if (end == argv[i] || *end != '\0' || !(options->residual >= 0.0 && options->residual <= 1.0)) {
        std::fprintf(stderr, "attention-cli analyze: --residual needs a number in [0, 1], got '%s'.\n%s",
                     argv[i], kUsage);
        return 2;
      }
    } else if (arg.size() > 1 && arg[0] == '-' && arg[1] == '-') {
      std::fprintf(stderr, "attention-cli analyze: unknown or incomplete option '%s'.\n%s",
                   arg.c_str(), kUsage);
      return 2;
    } else if (!have_text) {
      have_text = true;
      if (arg == "-") {
        options->text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
      } else {
        options->text = arg;
      }
    } else {
      std::fprintf(stderr, "attention-cli analyze: give the text as one argument (quote it).\n%s",
                   kUsage);
      return 2;
    }
  }
  if (options->model_path.empty() || !have_text) {
    std::fprintf(stderr, "attention-cli analyze: %s is missing.\n%s",
                 options->model_path.empty() ? "--model FILE" : "TEXT", kUsage);
    return 2;
  }
  return 0;
}

void WriteMatrix(FILE* out, const ConstMatrixMap& m) {
  std::fputc('[', out);
  for (Eigen::Index i = 0; i < m.rows(); ++i) {
    std::fputs(i ? ",[" : "[", out);
    for (Eigen::Index j = 0; j < m.cols(); ++j) {
      if (j) std::fputc(',', out);
      WriteJsonFloat(out, m(i, j));
    }
    std::fputc(']', out);
  }
  std::fputc(']', out);
}

void WriteJson(FILE* out, const Model& model, const SentenceAnalysis& analysis, bool hidden) {
  const Activations& a = analysis.activations;
  std::fputs("{\"model\":", out);
  WriteJsonModel(out, model);
  std::fputs(",\"tokens\":", out);
  WriteJsonTokens(out, analysis.encoding.tokens);
  std::fprintf(out, ",\"truncated\":%s,\"full_length\":%d,\"attention\":[",
               analysis.encoding.truncated ? "true" : "false", analysis.encoding.full_length);
  for (int32_t l = 0; l < a.layers; ++l) {
    std::fputs(l ? ",[" : "[", out);
    for (int32_t h = 0; h < a.heads; ++h) {
      if (h) std::fputc(',', out);
      WriteMatrix(out, a.Attention(l, h));
    }
    std::fputc(']', out);
  }
  std::fputs("],\"rollout\":", out);
  const RowMajorMatrix& rollout = analysis.rollout;
  WriteMatrix(out, ConstMatrixMap(rollout.data(), rollout.rows(), rollout.cols()));
  std::fputs(",\"head_profiles\":", out);
  WriteJsonHeadProfiles(out, analysis.head_profiles, a.heads);
  // Counted from 0, as the layer and head of head_profiles.
  std::fputs(",\"removed_heads\":[", out);
  bool first = true;
  for (size_t k = 0; k < a.removed_heads.size(); ++k) {
    if (!a.removed_heads[k]) continue;
    std::fprintf(out, "%s{\"layer\":%d,\"head\":%d}", first ? "" : ",",
                 static_cast<int>(k / static_cast<size_t>(a.heads)),
                 static_cast<int>(k % static_cast<size_t>(a.heads)));
    first = false;
  }
  std::fputc(']', out);
  if (hidden) {
    std::fputs(",\"hidden\":", out);
    WriteMatrix(out, a.HiddenState(a.layers));
  }
  std::fputs("}\n", out);
}

void WriteBarRow(FILE* out, const std::vector<Token>& tokens, const float* row) {
  const int32_t n = static_cast<int32_t>(tokens.size());
  for (int32_t j = 0; j < n; ++j) {
    const int width = static_cast<int>(row[j] * 40.0f + 0.5f);
    std::fprintf(out, "    %3d %-16s %.4f %s\n", j,
                 Printable(tokens[static_cast<size_t>(j)].text).c_str(),
                 static_cast<double>(row[j]), std::string(static_cast<size_t>(width), '#').c_str());
  }
  const RowStats stats = ComputeRowStats(row, n);
  std::fprintf(out, "    sum %.7f, max %.4f at %d, ratio to uniform %.2f, entropy %.3f nats\n",
               static_cast<double>(stats.sum), static_cast<double>(stats.max), stats.argmax,
               static_cast<double>(stats.ratio_to_uniform), static_cast<double>(stats.entropy));
}

void WriteSummary(FILE* out, const Model& model, const SentenceAnalysis& analysis,
                  const Options& options) {
  const ModelConfig& c = model.config();
  const Encoding& encoding = analysis.encoding;
  const Activations& a = analysis.activations;
  const std::vector<HeadProfile>& profiles = analysis.head_profiles;
  std::fprintf(out, "model: %s (%u layers, %u heads, hidden %u, vocab %u, %s)\n",
               Printable(model.name()).c_str(), c.num_hidden_layers, c.num_attention_heads,
               c.hidden_size, c.vocab_size, Printable(model.precision()).c_str());
  std::fprintf(out, "tokens (%zu%s):", encoding.tokens.size(), encoding.truncated ? ", truncated" : "");
  for (size_t i = 0; i < encoding.tokens.size(); ++i) {
    std::fprintf(out, " %zu:%s", i, Printable(encoding.tokens[i].text).c_str());
  }
  std::fputs("\n\nlayer head  label              prev  next  sink  self  punct  ratio  entropy/log n\n",
             out);
  for (size_t k = 0; k < profiles.size(); ++k) {
    const HeadProfile& p = profiles[k];
    std::fprintf(out, "%5zu %4zu  %-17s %5.2f %5.2f %5.2f %5.2f %6.2f %6.2f %8.3f\n",
                 k / static_cast<size_t>(a.heads), k % static_cast<size_t>(a.heads),
                 HeadLabelName(p.Label()), p.Fraction(p.previous_token), p.Fraction(p.next_token),
                 p.Fraction(p.cls + p.sep), p.Fraction(p.self), p.Fraction(p.punctuation),
                 p.mean_ratio_to_uniform(), p.mean_normalized_entropy());
  }
  if (options.word >= 0) {
    std::fprintf(out, "\nrow %d (%s), layer %d head %d:\n", options.word,
                 Printable(encoding.tokens[static_cast<size_t>(options.word)].text).c_str(),
                 options.layer, options.head);
    WriteBarRow(out, encoding.tokens, a.AttentionRow(options.layer, options.head, options.word));
    std::fprintf(out, "\nrow %d of the attention rollout (residual weight %.2f):\n", options.word,
                 options.residual);
    WriteBarRow(out, encoding.tokens,
                analysis.rollout.data() + static_cast<size_t>(options.word) * a.tokens);
  }
}

}  // namespace

int RunAnalyze(int argc, char** argv) {
  Options options;
  if (int code = ParseOptions(argc, argv, &options)) return code;
  std::unique_ptr<LoadedModel> loaded;
  Status status = LoadedModel::FromFile(options.model_path, &loaded);
  if (status.ok() && !options.shards.empty()) status = LoadShardFolder(options.shards, loaded.get());
  AnalysisOptions analysis_options;
  analysis_options.residual_weight = options.residual;
  if (options.hidden) analysis_options.outputs |= kOutputHiddenStates;
  if (status.ok()) {
    status = ParseHeadList(options.ablate, loaded->model().config(), &analysis_options.removed_heads);
    if (!status.ok()) {
      std::fprintf(stderr, "attention-cli analyze: --ablate: %s\n%s",
                   Printable(status.message()).c_str(), kUsage);
      return 2;
    }
  }
  SentenceAnalysis analysis;
  if (status.ok()) status = AnalyzeText(*loaded, options.text, analysis_options, &analysis);
  if (!status.ok()) {
    std::fprintf(stderr, "attention-cli analyze: %s\n", Printable(status.message()).c_str());
    return 1;
  }
  const Model& model = loaded->model();
  if (!options.json && options.word >= 0) {
    const ModelConfig& c = model.config();
    if (options.layer < 0 || options.layer >= static_cast<int>(c.num_hidden_layers) ||
        options.head < 0 || options.head >= static_cast<int>(c.num_attention_heads) ||
        options.word >= analysis.tokens()) {
      std::fprintf(stderr,
                   "attention-cli analyze: --layer must be in [0, %u), --head in [0, %u) and "
                   "--word in [0, %d) for this model and text.\n",
                   c.num_hidden_layers, c.num_attention_heads, analysis.tokens());
      return 2;
    }
  }
  if (options.json) {
    WriteJson(stdout, model, analysis, options.hidden);
  } else {
    WriteSummary(stdout, model, analysis, options);
  }
  return std::fflush(stdout) == 0 ? 0 : 1;
}

}  // namespace attn::cli
