// attention-cli lenses: every lens of core/lenses.h on one text, as one JSON object (--json) or
// a readable summary: the context-mixing ratios and, with a target, occlusion and each lens's
// faithfulness score.
#include <cmath>
#include <cstdio>
#include <cstdlib>
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
#include "core/lenses.h"

namespace attn::cli {
namespace {

constexpr const char* kUsage =
    "usage: attention-cli lenses --model FILE [--shards DIR|FILE] [--mask POS[,POS...]] [--target POS]\n"
    "                            [--flow-rows all|none|POS] [--json] TEXT|-\n"
    "  Positions count tokens from 0 ([CLS] is 0).\n"
    "  --mask       replace these tokens by [MASK] before the pass\n"
    "  --target     occlusion at this position and each lens's Spearman rho against it\n"
    "  --flow-rows  the rows of attention flow to compute (default all; n max-flow problems each)\n"
    "  --json       print {ids, tokens, weighted, weighted_layer, mixing, mixing_ratio, alti,\n"
    "               alti_rollout, rollout, flow, flow_normalized, value_zeroing[, target,\n"
    "               target_top1, target_logprob, occlusion, faithfulness]}; docs/ARCHITECTURE.md\n"
    "  TEXT '-' reads standard input.\n";

struct Options {
  std::string model_path, shards, text, mask, flow_rows = "all";
  int target = -1;
  bool json = false;
};

bool ParsePosition(const std::string& s, int* out) {
  long v = 0;
  if (!ParseInteger(s.c_str(), 0, 1000000, &v)) return false;
  *out = static_cast<int>(v);
  return true;
}

int UsageError(const std::string& message) {
  std::fprintf(stderr, "attention-cli lenses: %s\n%s", Printable(message).c_str(), kUsage);
  return 2;
}

// Returns 0 when parsed, else the exit code (usage errors are 2).
int ParseOptions(int argc, char** argv, Options* options) {
  bool have_text = false;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--json") {
      options->json = true;
    } else if (arg == "--model" && has_value) {
      options->model_path = argv[++i];
    } else if (arg == "--shards" && has_value) {
      options->shards = argv[++i];
    } else if (arg == "--mask" && has_value) {
      options->mask = argv[++i];
    } else if (arg == "--flow-rows" && has_value) {
      options->flow_rows = argv[++i];
    } else if (arg == "--target" && has_value) {
      if (!ParsePosition(argv[++i], &options->target)) return UsageError("--target needs a token position, got '" + std::string(argv[i]) + "'.");
    } else if (arg.size() > 1 && arg[0] == '-' && arg[1] == '-') {
      return UsageError("unknown or incomplete option '" + arg + "'.");
    } else if (!have_text) {
      have_text = true;
      if (arg == "-") {
        options->text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
      } else {
        options->text = arg;
      }
    } else {
      return UsageError("give the text as one argument (quote it).");
    }
  }
  if (options->model_path.empty() || !have_text) {
    return UsageError(std::string(options->model_path.empty() ? "--model FILE" : "TEXT") + " is missing.");
  }
  return 0;
}

// "3,5" to positions.
bool ParsePositions(const std::string& spec, std::vector<int32_t>* out) {
  size_t start = 0;
  while (start <= spec.size()) {
    size_t end = spec.find(',', start);
    if (end == std::string::npos) end = spec.size();
    int position = 0;
    if (!ParsePosition(spec.substr(start, end - start), &position)) return false;
    out->push_back(position);
    start = end + 1;
  }
  return !out->empty();
}

void WriteFloats(FILE* out, const float* values, size_t count) {
  std::fputc('[', out);
  for (size_t k = 0; k < count; ++k) {
    if (k) std::fputc(',', out);
    WriteJsonFloat(out, values[k]);
  }
  std::fputc(']', out);
}

// A flat array as nested arrays of the given shape (the last dimension innermost); a row whose
// entries are all NaN (a row not computed) is written as null.
void WriteNested(FILE* out, const float* values, const std::vector<size_t>& shape, size_t dim = 0) {
  if (dim + 1 == shape.size()) {
    bool all_nan = shape[dim] > 0;
    for (size_t k = 0; k < shape[dim] && all_nan; ++k) all_nan = std::isnan(values[k]);
    if (all_nan) {
      std::fputs("null", out);
    } else {
      WriteFloats(out, values, shape[dim]);
    }
    return;
  }
  size_t stride = 1;
  for (size_t k = dim + 1; k < shape.size(); ++k) stride *= shape[k];
  std::fputc('[', out);
  for (size_t k = 0; k < shape[dim]; ++k) {
    if (k) std::fputc(',', out);
    WriteNested(out, values + k * stride, shape, dim + 1);
  }
  std::fputc(']', out);
}

void WriteKey(FILE* out, const char* key, const std::vector<float>& values, const std::vector<size_t>& shape) {
  std::fprintf(out, ",\"%s\":", key);
  if (values.empty()) {
    std::fputs("null", out);
  } else {
    WriteNested(out, values.data(), shape);
  }
}

void WriteJson(FILE* out, const Model& model, const SentenceAnalysis& analysis, const Lenses& lenses) {
  const size_t L = static_cast<size_t>(lenses.layers), H = static_cast<size_t>(lenses.heads),
               n = static_cast<size_t>(lenses.tokens);
  std::fputs("{\"model\":", out);
  WriteJsonModel(out, model);
  std::fputs(",\"ids\":[", out);
  for (size_t k = 0; k < n; ++k) std::fprintf(out, "%s%d", k ? "," : "", analysis.activations.ids[k]);
  std::fputs("],\"tokens\":[", out);
  for (size_t k = 0; k < n; ++k) {
    if (k) std::fputc(',', out);
    WriteJsonString(out, analysis.encoding.tokens[k].text);
  }
  std::fprintf(out, "],\"truncated\":%s", analysis.encoding.truncated ? "true" : "false");
  WriteKey(out, "weighted", lenses.weighted, {L, H, n, n});
  WriteKey(out, "weighted_layer", lenses.weighted_layer, {L, n, n});
  WriteKey(out, "mixing", lenses.mixing, {L, n, n});
  WriteKey(out, "mixing_ratio", lenses.mixing_ratio, {L, n});
  WriteKey(out, "alti", lenses.alti, {L, n, n});
  WriteKey(out, "alti_rollout", lenses.alti_rollout, {n, n});
  WriteKey(out, "rollout", lenses.rollout, {n, n});
  // Rows not asked for are null; no rows at all is an array of nulls, the same shape.
  const std::vector<float> none(n * n, std::nanf(""));
  WriteKey(out, "flow", lenses.flow.empty() ? none : lenses.flow, {n, n});
  WriteKey(out, "flow_normalized", lenses.flow_normalized.empty() ? none : lenses.flow_normalized, {n, n});
  WriteKey(out, "value_zeroing", lenses.value_zeroing, {L, n, n});
  if (lenses.target >= 0) {
    std::fprintf(out, ",\"target\":%d,\"target_top1\":%d,\"target_logprob\":", lenses.target, lenses.target_top1);
    WriteJsonNumber(out, lenses.target_logprob, 10);
    std::fputs(",\"occlusion\":[", out);
    for (size_t k = 0; k < n; ++k) {
      if (k) std::fputc(',', out);
      WriteJsonNumber(out, lenses.occlusion[k], 10);
    }
    std::fputs("],\"faithfulness\":{", out);
    for (int k = 0; k < kFaithfulnessLenses; ++k) {
      std::fprintf(out, "%s\"%s\":", k ? "," : "", FaithfulnessLensName(static_cast<FaithfulnessLens>(k)));
      WriteJsonNumber(out, lenses.faithfulness[k], 10);
    }
    std::fputc('}', out);
  }
  std::fputs("}\n", out);
}

void WriteSummary(FILE* out, const LoadedModel& loaded, const SentenceAnalysis& analysis, const Lenses& lenses) {
  const std::vector<Token>& tokens = analysis.encoding.tokens;
  const int32_t n = lenses.tokens;
  std::fprintf(out, "model: %s\ntokens (%d):", Printable(loaded.model().name()).c_str(), n);
  for (int32_t i = 0; i < n; ++i) std::fprintf(out, " %d:%s", i, Printable(tokens[static_cast<size_t>(i)].text).c_str());
  std::fputs("\n\ncontext mixing: the share of each token's new vector that came from other tokens, by layer\n", out);
  for (int32_t i = 0; i < n; ++i) {
    std::fprintf(out, "  %3d %-16s", i, Printable(tokens[static_cast<size_t>(i)].text).c_str());
    for (int32_t l = 0; l < lenses.layers; ++l) {
      std::fprintf(out, " %5.1f%%", 100.0 * static_cast<double>(lenses.mixing_ratio[static_cast<size_t>(l * n + i)]));
    }
    std::fputc('\n', out);
  }
  if (lenses.target < 0) return;
  std::fprintf(out, "\ntarget %d (%s): top entry %s, log p = %.4f\n", lenses.target,
               Printable(tokens[static_cast<size_t>(lenses.target)].text).c_str(),
               Printable(loaded.tokenizer().vocab().piece(lenses.target_top1)).c_str(), lenses.target_logprob);
  std::fputs("occlusion (drop in log p when the token is [MASK]):\n", out);
  for (int32_t j = 0; j < n; ++j) {
    const double v = lenses.occlusion[static_cast<size_t>(j)];
    if (std::isnan(v)) continue;
    std::fprintf(out, "  %3d %-16s %+.4f\n", j, Printable(tokens[static_cast<size_t>(j)].text).c_str(), v);
  }
  std::fputs("faithfulness (Spearman rho of the target's row against occlusion):\n", out);
  for (int k = 0; k < kFaithfulnessLenses; ++k) {
    std::fprintf(out, "  %-22s %+.3f\n", FaithfulnessLensName(static_cast<FaithfulnessLens>(k)), lenses.faithfulness[k]);
  }
}

}  // namespace

int RunLenses(int argc, char** argv) {
  Options options;
  if (int code = ParseOptions(argc, argv, &options)) return code;
  AnalysisOptions analysis_options;
  analysis_options.outputs = kOutputValues;
  if (!options.mask.empty() && !ParsePositions(options.mask, &analysis_options.masked_positions)) {
    return UsageError("--mask needs positions like 3 or 3,5, got '" + options.mask + "'.");
  }
  LensOptions lens_options;
  lens_options.target = options.target;
  std::unique_ptr<LoadedModel> loaded;
  Status status = LoadedModel::FromFile(options.model_path, &loaded);
  if (status.ok() && !options.shards.empty()) status = LoadShardFolder(options.shards, loaded.get());
  SentenceAnalysis analysis;
  if (status.ok()) status = AnalyzeText(*loaded, options.text, analysis_options, &analysis);
  if (status.ok()) {
    const int32_t n = analysis.tokens();
    lens_options.value_zeroing_rows = LensOptions::AllRows(n);
    if (options.flow_rows == "all") {
      lens_options.flow_rows = LensOptions::AllRows(n);
    } else if (options.flow_rows != "none") {
      int row = 0;
      if (!ParsePosition(options.flow_rows, &row)) {
        return UsageError("--flow-rows needs all, none or a token position, got '" + options.flow_rows + "'.");
      }
      lens_options.flow_rows = {row};
    }
    Lenses lenses;
    status = ComputeLenses(*loaded, analysis, lens_options, &lenses);
    if (status.ok()) {
      if (options.json) {
        WriteJson(stdout, loaded->model(), analysis, lenses);
      } else {
        WriteSummary(stdout, *loaded, analysis, lenses);
      }
      return std::fflush(stdout) == 0 ? 0 : 1;
    }
  }
  std::fprintf(stderr, "attention-cli lenses: %s\n", Printable(status.message()).c_str());
  return 1;
}

}  // namespace attn::cli
