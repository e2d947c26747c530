// attention-cli profile, contribution and lens-set: the core's statistics over a sentence set
// (core/sentence_set.h), as one JSON object on standard output. These are the numbers the
// series' posts show; scripts/site/make_sets.mjs runs them on the f32 model when the site is
// built. docs/ARCHITECTURE.md ("Set statistics") gives the JSON field by field.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/json.h"
#include "cli/shards.h"
#include "cli/text.h"
#include "core/sentence_set.h"

namespace attn::cli {
namespace {

struct SetOptions {
  std::string model_path, sentences_path, shards;
  bool json = false, per_sentence = false, progress = false;
  stats::BootstrapOptions bootstrap;
  int32_t permutations = 10000;
  int32_t threads = 0;  // contribution, lens-set: 0 = one per core (at most 8)
  bool mean_ablation = false;  // contribution --ablation mean
};

// Returns 0 when parsed, else the exit code (usage errors are 2).
int ParseSetOptions(const char* command, const char* usage, int argc, char** argv, SetOptions* options) {
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    long value = 0;
    if (arg == "--json") {
      options->json = true;
    } else if (arg == "--per-sentence") {
      options->per_sentence = true;
    } else if (arg == "--progress") {
      options->progress = true;
    } else if (arg == "--model" && has_value) {
      options->model_path = argv[++i];
    } else if (arg == "--sentences" && has_value) {
      options->sentences_path = argv[++i];
    } else if (arg == "--shards" && has_value) {
      options->shards = argv[++i];
    } else if (arg == "--ablation" && has_value) {
      const std::string kind = argv[++i];
      if (kind != "zero" && kind != "mean") {
        std::fprintf(stderr, "attention-cli %s: --ablation is zero or mean, got '%s'.\n%s", command,
                     Printable(kind).c_str(), usage);
        return 2;
      }
      options->mean_ablation = kind == "mean";
    } else if (arg == "--threads" && has_value) {
      if (!ParseInteger(argv[++i], 1, 64, &value)) {
        std::fprintf(stderr, "attention-cli %s: --threads needs a whole number from 1 to 64, got '%s'.\n%s",
                     command, Printable(argv[i]).c_str(), usage);
        return 2;
      }
      options->threads = static_cast<int32_t>(value);
    } else if ((arg == "--resamples" || arg == "--permutations" || arg == "--seed") && has_value) {
      if (!ParseInteger(argv[++i], 0, 100000000, &value)) {
        std::fprintf(stderr, "attention-cli %s: %s needs a whole number from 0 to 100000000, got '%s'.\n%s",
                     command, arg.c_str(), Printable(argv[i]).c_str(), usage);
        return 2;
      }
      if (arg == "--resamples") options->bootstrap.resamples = static_cast<int32_t>(value);
      if (arg == "--permutations") options->permutations = static_cast<int32_t>(value);
      if (arg == "--seed") options->bootstrap.seed = static_cast<uint64_t>(value);
    } else {
      std::fprintf(stderr, "attention-cli %s: unknown or incomplete option '%s'.\n%s", command, Printable(arg).c_str(), usage);
      return 2;
    }
  }
  if (options->model_path.empty() || options->sentences_path.empty() || !options->json) {
    std::fprintf(stderr, "attention-cli %s: %s is missing.\n%s", command,
                 options->model_path.empty() ? "--model FILE"
                 : options->sentences_path.empty() ? "--sentences FILE"
                                                   : "--json (the only output form)",
                 usage);
    return 2;
  }
  return 0;
}

// The model, its optional shards and the sentences (every non-empty line); false after
// printing why not.
bool LoadInputs(const char* command, const SetOptions& options, std::unique_ptr<LoadedModel>* model,
                std::vector<std::string>* sentences) {
  Status status = LoadedModel::FromFile(options.model_path, model);
  if (status.ok() && !options.shards.empty()) status = LoadShardFolder(options.shards, model->get());
  if (!status.ok()) {
    std::fprintf(stderr, "attention-cli %s: %s\n", command, Printable(status.message()).c_str());
    return false;
  }
  std::ifstream in(options.sentences_path);
  if (!in) {
    std::fprintf(stderr, "attention-cli %s: cannot open the sentences file '%s'.\n", command,
                 Printable(options.sentences_path).c_str());
    return false;
  }
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) sentences->push_back(line);
  }
  if (sentences->empty()) {
    std::fprintf(stderr, "attention-cli %s: the sentences file '%s' has no sentences (one per line).\n",
                 command, Printable(options.sentences_path).c_str());
    return false;
  }
  return true;
}

std::function<void(size_t, size_t)> ProgressLine(const char* command, bool on) {
  if (!on) return {};
  // A line every 25 sentences, which reads well in a build log as on a terminal.
  return [command](size_t done, size_t total) {
    if (done % 25 == 0 || done == total) std::fprintf(stderr, "attention-cli %s: %zu of %zu sentences\n", command, done, total);
  };
}

void WriteBootstrap(FILE* out, const stats::BootstrapOptions& b) {
  std::fprintf(out, "{\"unit\":\"sentence\",\"resamples\":%d,\"seed\":%llu,\"level\":", b.resamples,
               static_cast<unsigned long long>(b.seed));
  WriteJsonStatistic(out, b.level);
  std::fputc('}', out);
}

// {"value", "low", "high"}: the estimate over the set and its bootstrap interval.
void WriteEstimate(FILE* out, const Estimate& e) {
  std::fputs("{\"value\":", out);
  WriteJsonNumber(out, e.value, 9);
  std::fputs(",\"low\":", out);
  WriteJsonNumber(out, e.interval.low, 9);
  std::fputs(",\"high\":", out);
  WriteJsonNumber(out, e.interval.high, 9);
  std::fputc('}', out);
}

void WriteCounts(FILE* out, const HeadProfile& p) {
  std::fputc('{', out);
  bool first = true;
  for (const auto& [name, count] : HeadProfileCounts(p)) {
    std::fprintf(out, "%s\"%s\":%lld", first ? "" : ",", name, static_cast<long long>(count));
    first = false;
  }
  const std::pair<const char*, double> sums[] = {{"entropy_sum", p.entropy_sum},
                                                 {"normalized_entropy_sum", p.normalized_entropy_sum},
                                                 {"ratio_to_uniform_sum", p.ratio_to_uniform_sum}};
  for (const auto& [name, sum] : sums) {
    std::fprintf(out, ",\"%s\":", name);
    WriteJsonNumber(out, sum, 17);
  }
  std::fputc('}', out);
}

constexpr const char* kProfileUsage =
    "usage: attention-cli profile --model FILE [--shards DIR|FILE] --sentences FILE --json [--per-sentence]\n"
    "                             [--resamples B] [--seed S] [--progress]\n"
    "  Every head over the sentences (one per line): the counts behind each share with their\n"
    "  denominators, the label by the core's rule, and cluster-bootstrap intervals over sentences\n"
    "  (B resamples, default 1000) with the share of resamples that reproduce the label.\n"
    "  --per-sentence  add every sentence's counts (to re-derive the bootstrap independently)\n";

constexpr const char* kContributionUsage =
    "usage: attention-cli contribution --model FILE [--shards DIR|FILE] --sentences FILE --json\n"
    "                                  [--ablation zero|mean] [--resamples B] [--permutations P] [--seed S]\n"
    "                                  [--threads N] [--progress]\n"
    "  Every whole word of every sentence, masked alone: the exact probability of the original\n"
    "  word, each head's largest weight in the [MASK] row, and the probability with each head\n"
    "  alone removed; with a summary (bootstrap B, default 1000; the agreement's permutation\n"
    "  null P, default 10000, plain and within position classes). --ablation zero (the default)\n"
    "  removes a head as head_mask does, its output zero; mean replaces it by the head's mean\n"
    "  output over every token of these sentences. The sentences are measured on N threads\n"
    "  (default one per core, at most 8; the result does not depend on N).\n";

constexpr const char* kLensSetUsage =
    "usage: attention-cli lens-set --model FILE [--shards DIR|FILE] --sentences FILE --json\n"
    "                              [--resamples B] [--seed S] [--threads N] [--progress]\n"
    "  Every whole word of every sentence as the masked target: occlusion of every other token,\n"
    "  and Spearman's rho between it and the target's row of each lens (last-layer head-mean\n"
    "  attention, rollout, flow, ALTI rollout, last-layer weighted_layer) and of the distance\n"
    "  baseline; per layer, the share of ordinary tokens' rows on [CLS], [SEP], punctuation and\n"
    "  the token itself under attention, weighted_layer and ALTI, and the context-mixing ratio.\n"
    "  Means with cluster-bootstrap intervals over sentences (B resamples, default 1000) and\n"
    "  paired differences between lenses. N threads (default one per core, at most 8; the\n"
    "  result does not depend on N).\n";

// Measures every sentence on several threads: each thread takes the next sentence not yet
// taken and measures it (measure(model, s, &results[s])) on its own copy of the model (an
// analysis keeps its work space in the model it runs on, so a copy serves one thread). Each
// sentence is measured alone, so the results are the ones one thread gives, value for value.
// The first failing sentence's status is the result (it names that sentence).
template <typename Result>
Status MeasureOnThreads(const SetOptions& options, LoadedModel& model, size_t sentences,
                        const std::function<Status(LoadedModel&, size_t, Result*)>& measure,
                        std::vector<Result>* results, const std::function<void(size_t, size_t)>& progress) {
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const size_t threads = std::max<size_t>(1, std::min<size_t>(
      options.threads > 0 ? static_cast<size_t>(options.threads) : std::min(cores, 8u), sentences));
  std::vector<std::unique_ptr<LoadedModel>> copies(threads);
  for (size_t t = 1; t < threads; ++t) {
    Status status = LoadedModel::FromFile(options.model_path, &copies[t]);
    if (status.ok() && !options.shards.empty()) status = LoadShardFolder(options.shards, copies[t].get());
    if (!status.ok()) return status;
  }
  std::mutex lock;
  std::atomic<size_t> next{0}, done{0};
  std::atomic<bool> failed{false};  // no new sentence is taken after a failure
  results->assign(sentences, Result());
  std::vector<Status> statuses(sentences, Status::Ok());
  const auto work = [&](size_t t) {
    LoadedModel& mine = t == 0 ? model : *copies[t];
    for (size_t s = next++; s < sentences && !failed; s = next++) {
      statuses[s] = measure(mine, s, &(*results)[s]);
      if (!statuses[s].ok()) failed = true;
      const size_t d = ++done;
      if (!progress) continue;
      std::lock_guard<std::mutex> guard(lock);
      progress(d, sentences);
    }
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(work, t);
  work(0);
  for (std::thread& thread : pool) thread.join();
  for (const Status& status : statuses) {
    if (!status.ok()) return status;
  }
  return Status::Ok();
}

// MeasureContributions over the sentences on several threads, the words joined in sentence order.
Status MeasureContributionsOnThreads(const SetOptions& options, LoadedModel& model,
                                     const std::vector<std::string>& sentences, const std::vector<float>& replacements,
                                     std::vector<WordContribution>* words,
                                     const std::function<void(size_t, size_t)>& progress) {
  std::vector<std::vector<WordContribution>> per_sentence;
  const std::function<Status(LoadedModel&, size_t, std::vector<WordContribution>*)> measure =
      [&](LoadedModel& mine, size_t s, std::vector<WordContribution>* out) {
        return MeasureContributions(mine, {sentences[s]}, out, {}, s, replacements);
      };
  Status status = MeasureOnThreads(options, model, sentences.size(), measure, &per_sentence, progress);
  if (!status.ok()) return status;
  words->clear();
  for (auto& sentence : per_sentence) {
    words->insert(words->end(), std::make_move_iterator(sentence.begin()), std::make_move_iterator(sentence.end()));
  }
  return Status::Ok();
}

}  // namespace

int RunProfile(int argc, char** argv) {
  SetOptions options;
  if (int code = ParseSetOptions("profile", kProfileUsage, argc, argv, &options)) return code;
  std::unique_ptr<LoadedModel> model;
  std::vector<std::string> sentences;
  if (!LoadInputs("profile", options, &model, &sentences)) return 1;
  SetProfile profile;
  Status status = ProfileSentences(*model, sentences, options.bootstrap, &profile, ProgressLine("profile", options.progress));
  if (!status.ok()) {
    std::fprintf(stderr, "attention-cli profile: %s\n", Printable(status.message()).c_str());
    return 1;
  }
  FILE* out = stdout;
  const int heads = static_cast<int>(model->model().config().num_attention_heads);
  std::fputs("{\"model\":", out);
  WriteJsonModel(out, model->model());
  std::fprintf(out, ",\"sentences\":%d,\"bootstrap\":", profile.sentences);
  WriteBootstrap(out, options.bootstrap);
  std::fputs(",\"label_rule\":{\"broad_normalized_entropy\":", out);
  WriteJsonStatistic(out, HeadProfile::kBroadEntropy);
  std::fputs(",\"label_fraction\":", out);
  WriteJsonStatistic(out, HeadProfile::kLabelFraction);
  std::fputs(",\"stable_label\":", out);
  WriteJsonStatistic(out, kStableLabel);
  std::fputs("},\"heads\":[", out);
  const auto& shares = ProfileShares();
  for (size_t k = 0; k < profile.heads.size(); ++k) {
    const HeadSetProfile& head = profile.heads[k];
    std::fprintf(out, "%s{\"layer\":%d,\"head\":%d,\"label\":", k ? "," : "",
                 static_cast<int>(k) / heads + 1, static_cast<int>(k) % heads + 1);
    WriteJsonString(out, HeadLabelName(head.label));
    std::fputs(",\"label_stability\":", out);
    WriteJsonStatistic(out, head.label_stability);
    std::fprintf(out, ",\"borderline\":%s,\"counts\":", head.label_stability < kStableLabel ? "true" : "false");
    WriteCounts(out, head.counts);
    // Each share with its numerator and denominator, so that a reader can check it.
    std::fputs(",\"shares\":{", out);
    for (size_t q = 0; q < shares.size(); ++q) {
      std::fprintf(out, "%s\"%s\":{\"numerator\":%lld,\"denominator\":%lld,\"estimate\":", q ? "," : "",
                   shares[q].name, static_cast<long long>(shares[q].numerator(head.counts)),
                   static_cast<long long>(shares[q].denominator(head.counts)));
      WriteEstimate(out, head.shares[q]);
      std::fputc('}', out);
    }
    std::fputs("},\"mean_normalized_entropy\":", out);
    WriteEstimate(out, head.mean_normalized_entropy);
    std::fputs(",\"mean_ratio_to_uniform\":", out);
    WriteEstimate(out, head.mean_ratio_to_uniform);
    std::fputs(",\"mean_entropy\":", out);
    WriteJsonNumber(out, head.counts.mean_entropy(), 9);
    // Word rows with at least kSharpWeight on one neighbour, and the mean largest weight.
    const ConfidentCounts& c = profile.confident;
    std::fprintf(out, ",\"sharp_neighbour\":{\"numerator\":%lld,\"denominator\":%lld,\"estimate\":",
                 static_cast<long long>(c.sharp_neighbour[k]), static_cast<long long>(c.words));
    WriteEstimate(out, profile.sharp_neighbour_share[k]);
    std::fputs("},\"mean_largest_word_weight\":", out);
    WriteJsonNumber(out, c.words ? c.largest_sum[k] / static_cast<double>(c.words) : 0.0, 9);
    std::fputc('}', out);
  }
  std::fputc(']', out);
  {
    // The most confident head of every word (ConfidentCounts says how each count is made).
    const ConfidentCounts& c = profile.confident;
    std::fputs(",\"confident\":{\"sharp_weight\":", out);
    WriteJsonStatistic(out, kSharpWeight);
    std::fprintf(out, ",\"words\":%lld,\"positional\":%lld,\"neighbour_word\":%lld,\"value_weighted_positional\":%lld,"
                 "\"content_rows\":%lld",
                 static_cast<long long>(c.words), static_cast<long long>(c.positional), static_cast<long long>(c.neighbour_word),
                 static_cast<long long>(c.value_weighted_positional), static_cast<long long>(c.content_rows));
    const std::pair<const char*, const Estimate*> estimates[] = {
        {"positional_share", &profile.positional_share},
        {"neighbour_word_share", &profile.neighbour_word_share},
        {"value_weighted_share", &profile.value_weighted_share}};
    for (const auto& [name, estimate] : estimates) {
      std::fprintf(out, ",\"%s\":", name);
      WriteEstimate(out, *estimate);
    }
    std::fputs(",\"mean_ratio\":", out);
    WriteJsonNumber(out, c.words ? c.ratio_sum / static_cast<double>(c.words) : 0.0, 9);
    std::fputs(",\"mean_content_ratio\":", out);
    WriteJsonNumber(out, c.words ? c.content_ratio_sum / static_cast<double>(c.words) : 0.0, 9);
    std::fputs(",\"relations\":{", out);
    for (int r = 0; r < 6; ++r) {
      if (r) std::fputc(',', out);
      WriteJsonString(out, ConfidentRelationName(r));
      std::fprintf(out, ":%lld", static_cast<long long>(c.relations[r]));
    }
    std::fputc('}', out);
    const std::pair<const char*, const std::vector<int64_t>*> wins[] = {
        {"wins", &c.wins}, {"value_weighted_wins", &c.value_weighted_wins}, {"content_wins", &c.content_wins}};
    for (const auto& [name, list] : wins) {
      std::fprintf(out, ",\"%s\":[", name);
      for (size_t k = 0; k < list->size(); ++k) std::fprintf(out, "%s%lld", k ? "," : "", static_cast<long long>((*list)[k]));
      std::fputc(']', out);
    }
    std::fputc('}', out);
  }
  if (options.per_sentence) {
    std::fputs(",\"per_sentence\":[", out);
    for (size_t s = 0; s < profile.per_sentence.size(); ++s) {
      std::fputs(s ? ",[" : "[", out);
      for (size_t k = 0; k < profile.per_sentence[s].size(); ++k) {
        if (k) std::fputc(',', out);
        WriteCounts(out, profile.per_sentence[s][k]);
      }
      std::fputc(']', out);
    }
    std::fputc(']', out);
  }
  std::fputs("}\n", out);
  return std::fflush(out) == 0 ? 0 : 1;
}

int RunContribution(int argc, char** argv) {
  SetOptions options;
  if (int code = ParseSetOptions("contribution", kContributionUsage, argc, argv, &options)) return code;
  std::unique_ptr<LoadedModel> model;
  std::vector<std::string> sentences;
  if (!LoadInputs("contribution", options, &model, &sentences)) return 1;
  // Mean-ablation: each head's mean output over these sentences' tokens, measured first.
  std::vector<float> replacements;
  int64_t mean_tokens = 0;
  Status status = options.mean_ablation ? MeanHeadContexts(*model, sentences, &replacements, &mean_tokens) : Status::Ok();
  std::vector<WordContribution> words;
  if (status.ok()) {
    status = MeasureContributionsOnThreads(options, *model, sentences, replacements, &words,
                                           ProgressLine("contribution", options.progress));
  }
  if (!status.ok()) {
    std::fprintf(stderr, "attention-cli contribution: %s\n", Printable(status.message()).c_str());
    return 1;
  }
  const ModelConfig& c = model->model().config();
  const int32_t heads = static_cast<int32_t>(c.num_hidden_layers * c.num_attention_heads);
  const ContributionSummary summary = SummarizeContributions(
      words, static_cast<int32_t>(sentences.size()), heads, options.bootstrap, options.permutations);
  FILE* out = stdout;
  std::fputs("{\"model\":", out);
  WriteJsonModel(out, model->model());
  std::fprintf(out, ",\"sentences\":%zu,\"heads\":%d,\"predicted_rank\":%d,\"bootstrap\":", sentences.size(),
               heads, kPredictedRank);
  WriteBootstrap(out, options.bootstrap);
  std::fprintf(out, ",\"permutations\":%d,\"ablation\":{\"kind\":\"%s\",\"mean_tokens\":%lld}",
               options.permutations, options.mean_ablation ? "mean" : "zero", static_cast<long long>(mean_tokens));
  std::fputs(",\"position_classes\":[", out);
  for (int32_t k = 0; k < kPositionClasses; ++k) {
    if (k) std::fputc(',', out);
    WriteJsonString(out, PositionClassName(k));
  }
  std::fputs("],\"words\":[", out);
  const Vocab& vocab = model->tokenizer().vocab();
  for (size_t w = 0; w < words.size(); ++w) {
    const WordContribution& x = words[w];
    std::fprintf(out, "%s{\"sentence\":%d,\"token\":%d,\"position_class\":%d,\"word\":", w ? "," : "",
                 x.sentence, x.token, x.position_class);
    WriteJsonString(out, x.word);
    std::fprintf(out, ",\"id\":%d,\"p_full\":", x.id);
    WriteJsonNumber(out, x.p_full, 17);
    std::fprintf(out, ",\"rank_full\":%d,\"top1_full\":%d,\"top1_full_text\":", x.rank_full, x.top1_full);
    WriteJsonString(out, vocab.piece(x.top1_full));
    std::fputs(",\"attention\":[", out);
    for (size_t k = 0; k < x.attention.size(); ++k) {
      if (k) std::fputc(',', out);
      WriteJsonFloat(out, x.attention[k]);
    }
    std::fputs("],\"p_removed\":[", out);
    for (size_t k = 0; k < x.p_removed.size(); ++k) {
      if (k) std::fputc(',', out);
      WriteJsonNumber(out, x.p_removed[k], 17);
    }
    std::fputs("],\"top1_removed\":[", out);
    for (size_t k = 0; k < x.top1_removed.size(); ++k) std::fprintf(out, "%s%d", k ? "," : "", x.top1_removed[k]);
    std::fputs("]}", out);
  }
  const ContributionSummary& s = summary;
  std::fprintf(out, "],\"summary\":{\"words\":%lld,\"top1_correct\":%lld,\"rho_defined\":%lld",
               static_cast<long long>(s.words), static_cast<long long>(s.top1_correct),
               static_cast<long long>(s.rho_defined));
  const std::pair<const char*, const ContributionSummary::EffectGroup*> groups[] = {
      {"predicted", &s.predicted}, {"unpredicted", &s.unpredicted}};
  for (const auto& [name, group] : groups) {
    std::fprintf(out, ",\"%s\":{\"words\":%lld,\"mean_abs_effect\":", name, static_cast<long long>(group->words));
    WriteEstimate(out, group->mean_abs_effect);
    std::fputs(",\"mean_abs_log_effect\":", out);
    WriteEstimate(out, group->mean_abs_log_effect);
    std::fputc('}', out);
  }
  std::fprintf(out, ",\"agreement\":{\"words\":%lld,\"observed\":%lld,\"expected\":",
               static_cast<long long>(s.agreement.items), static_cast<long long>(s.agreement.observed));
  WriteJsonNumber(out, s.agreement.expected, 9);
  std::fputs(",\"p_value\":", out);
  WriteJsonNumber(out, s.agreement.p_value, 6);
  std::fprintf(out, ",\"permutations\":%d,\"position_kept\":{\"expected\":", s.agreement.permutations);
  WriteJsonNumber(out, s.agreement_position_kept.expected, 9);
  std::fputs(",\"p_value\":", out);
  WriteJsonNumber(out, s.agreement_position_kept.p_value, 6);
  std::fputs("},\"share\":", out);
  WriteEstimate(out, s.agreement_share);
  std::fprintf(out, ",\"distinct_attending\":%d,\"distinct_consequential\":%d}", s.distinct_attending,
               s.distinct_consequential);
  const std::pair<const char*, const Estimate*> estimates[] = {
      {"rho_per_word", &s.rho_per_word},   {"rho_constant_attention", &s.rho_constant_attention},
      {"rho_beyond_head", &s.rho_beyond_head}, {"within_rho", &s.within_rho},
      {"within_rho_log", &s.within_rho_log},   {"top1_survival", &s.top1_survival},
  };
  for (const auto& [name, estimate] : estimates) {
    std::fprintf(out, ",\"%s\":", name);
    WriteEstimate(out, *estimate);
  }
  std::fputs(",\"per_head\":[", out);
  for (size_t k = 0; k < s.per_head.size(); ++k) {
    const ContributionSummary::Head& h = s.per_head[k];
    std::fprintf(out, "%s{\"layer\":%d,\"head\":%d", k ? "," : "",
                 static_cast<int>(k / c.num_attention_heads) + 1, static_cast<int>(k % c.num_attention_heads) + 1);
    const std::pair<const char*, double> fields[] = {
        {"mean_attention", h.mean_attention}, {"mean_abs_effect", h.mean_abs_effect},
        {"mean_abs_log_effect", h.mean_abs_log_effect}, {"top1_survival", h.top1_survival},
        {"within_rho", h.within_rho}, {"within_rho_log", h.within_rho_log},
    };
    for (const auto& [name, value] : fields) {
      std::fprintf(out, ",\"%s\":", name);
      WriteJsonNumber(out, value, 9);
    }
    std::fprintf(out, ",\"most_attending\":%lld,\"most_consequential\":%lld}",
                 static_cast<long long>(h.most_attending), static_cast<long long>(h.most_consequential));
  }
  std::fputs("]}}\n", out);
  return std::fflush(out) == 0 ? 0 : 1;
}

int RunLensSet(int argc, char** argv) {
  SetOptions options;
  if (int code = ParseSetOptions("lens-set", kLensSetUsage, argc, argv, &options)) return code;
  std::unique_ptr<LoadedModel> model;
  std::vector<std::string> sentences;
  if (!LoadInputs("lens-set", options, &model, &sentences)) return 1;
  struct Measured {
    std::vector<TargetFaithfulness> targets;
    std::vector<SentenceLensSums> sums;
  };
  std::vector<Measured> measured;
  const std::function<Status(LoadedModel&, size_t, Measured*)> measure = [&](LoadedModel& mine, size_t s, Measured* out) {
    return MeasureLensFaithfulness(mine, {sentences[s]}, &out->targets, &out->sums, {}, s);
  };
  Status status = MeasureOnThreads(options, *model, sentences.size(), measure, &measured, ProgressLine("lens-set", options.progress));
  if (!status.ok()) {
    std::fprintf(stderr, "attention-cli lens-set: %s\n", Printable(status.message()).c_str());
    return 1;
  }
  std::vector<TargetFaithfulness> targets;
  std::vector<SentenceLensSums> sums;
  for (Measured& m : measured) {
    targets.insert(targets.end(), std::make_move_iterator(m.targets.begin()), std::make_move_iterator(m.targets.end()));
    sums.insert(sums.end(), m.sums.begin(), m.sums.end());
  }
  const int32_t layers = static_cast<int32_t>(model->model().config().num_hidden_layers);
  const LensSetSummary summary = SummarizeLensFaithfulness(targets, sums, layers, options.bootstrap);

  FILE* out = stdout;
  const auto write_names = [out](const char* key, int count, const char* (*name)(int)) {
    std::fprintf(out, ",\"%s\":[", key);
    for (int k = 0; k < count; ++k) {
      if (k) std::fputc(',', out);
      WriteJsonString(out, name(k));
    }
    std::fputc(']', out);
  };
  const auto write_list = [out](const std::vector<double>& values, size_t from, size_t count, int digits) {
    std::fputc('[', out);
    for (size_t k = 0; k < count; ++k) {
      if (k) std::fputc(',', out);
      WriteJsonNumber(out, values[from + k], digits);
    }
    std::fputc(']', out);
  };
  const auto write_estimates = [out](const std::vector<Estimate>& values, size_t from, size_t count) {
    std::fputc('[', out);
    for (size_t k = 0; k < count; ++k) {
      if (k) std::fputc(',', out);
      WriteEstimate(out, values[from + k]);
    }
    std::fputc(']', out);
  };
  // {"attention": {"cls": [L], ...}, ...} from (readings, categories, L) values, readings from `first`.
  const auto write_readings = [&](int first, const auto& write_layers) {
    std::fputc('{', out);
    for (int r = first; r < kShareReadings; ++r) {
      std::fprintf(out, "%s\"%s\":{", r > first ? "," : "", ShareReadingName(r));
      for (int c = 0; c < kShareCategories; ++c) {
        std::fprintf(out, "%s\"%s\":", c ? "," : "", ShareCategoryName(c));
        write_layers(static_cast<size_t>((r - first) * kShareCategories + c) * static_cast<size_t>(layers));
      }
      std::fputc('}', out);
    }
    std::fputc('}', out);
  };
  const size_t L = static_cast<size_t>(layers);

  std::fputs("{\"model\":", out);
  WriteJsonModel(out, model->model());
  std::fprintf(out, ",\"sentences\":%zu,\"layers\":%d,\"bootstrap\":", sentences.size(), layers);
  WriteBootstrap(out, options.bootstrap);
  write_names("lenses", kSetLenses, SetLensName);
  write_names("readings", kShareReadings, ShareReadingName);
  write_names("categories", kShareCategories, ShareCategoryName);
  std::fputs(",\"targets\":[", out);
  for (size_t w = 0; w < targets.size(); ++w) {
    const TargetFaithfulness& x = targets[w];
    std::fprintf(out, "%s{\"sentence\":%d,\"token\":%d,\"word\":", w ? "," : "", x.sentence, x.token);
    WriteJsonString(out, x.word);
    std::fprintf(out, ",\"id\":%d,\"top1\":%d,\"logprob\":", x.id, x.top1);
    WriteJsonNumber(out, x.logprob, 9);
    std::fprintf(out, ",\"positions\":%d,\"rho\":", x.positions);
    write_list(std::vector<double>(std::begin(x.rho), std::end(x.rho)), 0, kSetLenses, 9);
    std::fputs(",\"occlusion\":", out);
    write_list(x.occlusion, 0, x.occlusion.size(), 9);
    std::fputc('}', out);
  }
  std::fputs("],\"per_sentence\":[", out);
  for (size_t s = 0; s < sums.size(); ++s) {
    std::fprintf(out, "%s{\"rows\":%d,\"shares\":", s ? "," : "", sums[s].rows);
    write_readings(0, [&](size_t at) { write_list(sums[s].shares, at, L, 12); });
    std::fputs(",\"mixing_ratio\":", out);
    write_list(sums[s].mixing_ratio, 0, L, 12);
    std::fputc('}', out);
  }
  const LensSetSummary& m = summary;
  std::fprintf(out, "],\"summary\":{\"targets\":%lld,\"rows\":%lld,\"best\":", static_cast<long long>(m.targets),
               static_cast<long long>(m.rows));
  WriteJsonString(out, SetLensName(m.best));
  std::fputs(",\"faithfulness\":{", out);
  for (int k = 0; k < kSetLenses; ++k) {
    std::fprintf(out, "%s\"%s\":{\"defined\":%lld,\"undefined\":%lld,\"mean_rho\":", k ? "," : "", SetLensName(k),
                 static_cast<long long>(m.lenses[k].defined), static_cast<long long>(m.lenses[k].undefined));
    WriteEstimate(out, m.lenses[k].mean_rho);
    std::fputs(",\"best_share\":", out);
    WriteJsonStatistic(out, m.lenses[k].best_share);
    std::fputc('}', out);
  }
  std::fputs("},\"differences\":[", out);
  for (size_t p = 0; p < m.differences.size(); ++p) {
    const LensSetSummary::Difference& d = m.differences[p];
    std::fprintf(out, "%s{\"a\":", p ? "," : "");
    WriteJsonString(out, SetLensName(d.a));
    std::fputs(",\"b\":", out);
    WriteJsonString(out, SetLensName(d.b));
    std::fprintf(out, ",\"targets\":%lld,\"mean\":", static_cast<long long>(d.targets));
    WriteEstimate(out, d.mean);
    std::fputc('}', out);
  }
  std::fputs("],\"shares\":", out);
  write_readings(0, [&](size_t at) { write_estimates(m.shares, at, L); });
  std::fputs(",\"share_minus_attention\":", out);
  write_readings(1, [&](size_t at) { write_estimates(m.share_minus_attention, at, L); });
  std::fputs(",\"mixing_ratio\":", out);
  write_estimates(m.mixing_ratio, 0, L);
  std::fputs("}}\n", out);
  return std::fflush(out) == 0 ? 0 : 1;
}

}  // namespace attn::cli
