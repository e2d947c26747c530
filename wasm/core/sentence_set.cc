// Head profiles, head-removal contributions and the lenses' faithfulness over a sentence set,
// with their bootstrap intervals (sentence_set.h says what each number means).
#include "core/sentence_set.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>

namespace attn {
namespace {

double Ratio(int64_t numerator, int64_t denominator) {
  return denominator ? static_cast<double>(numerator) / static_cast<double>(denominator)
                     : std::numeric_limits<double>::quiet_NaN();
}

double Mean(const std::vector<double>& values) {
  double sum = 0;
  int64_t count = 0;
  for (double v : values) {
    if (!std::isfinite(v)) continue;
    sum += v;
    ++count;
  }
  return count ? sum / static_cast<double>(count) : std::numeric_limits<double>::quiet_NaN();
}

// A statistic's value over the set and over every resample, made into an Estimate.
Estimate FromResamples(double value, const std::vector<double>& resampled, double level) {
  return {value, stats::PercentileInterval(resampled, level)};
}

}  // namespace

const std::vector<ProfileShare>& ProfileShares() {
  using P = const HeadProfile&;
  static const std::vector<ProfileShare> shares = {
      {"word_previous", [](P p) { return p.word_previous; }, [](P p) { return p.word_rows_with_previous; }},
      {"word_next", [](P p) { return p.word_next; }, [](P p) { return p.word_rows_with_next; }},
      {"word_previous_of_all_word_rows", [](P p) { return p.word_previous; }, [](P p) { return p.word_rows; }},
      {"word_next_of_all_word_rows", [](P p) { return p.word_next; }, [](P p) { return p.word_rows; }},
      {"target_special", [](P p) { return p.target_special; }, [](P p) { return p.rows; }},
      {"target_self", [](P p) { return p.target_self; }, [](P p) { return p.rows; }},
      {"target_previous", [](P p) { return p.target_previous; }, [](P p) { return p.rows; }},
      {"target_next", [](P p) { return p.target_next; }, [](P p) { return p.rows; }},
      {"target_punctuation", [](P p) { return p.target_punctuation; }, [](P p) { return p.rows; }},
      {"target_other", [](P p) { return p.target_other; }, [](P p) { return p.rows; }},
      {"previous_token", [](P p) { return p.previous_token; }, [](P p) { return p.rows; }},
      {"next_token", [](P p) { return p.next_token; }, [](P p) { return p.rows; }},
      {"sink", [](P p) { return p.cls + p.sep; }, [](P p) { return p.rows; }},
      {"self", [](P p) { return p.self; }, [](P p) { return p.rows; }},
      {"punctuation", [](P p) { return p.punctuation; }, [](P p) { return p.rows; }},
  };
  return shares;
}

void ConfidentCounts::Merge(const ConfidentCounts& o) {
  const auto add = [](auto& into, const auto& from) {
    if (into.size() < from.size()) into.resize(from.size(), 0);
    for (size_t k = 0; k < from.size(); ++k) into[k] += from[k];
  };
  words += o.words;
  positional += o.positional;
  neighbour_word += o.neighbour_word;
  value_weighted_positional += o.value_weighted_positional;
  content_rows += o.content_rows;
  ratio_sum += o.ratio_sum;
  content_ratio_sum += o.content_ratio_sum;
  for (int r = 0; r < 6; ++r) relations[r] += o.relations[r];
  add(wins, o.wins);
  add(value_weighted_wins, o.value_weighted_wins);
  add(content_wins, o.content_wins);
  add(sharp_neighbour, o.sharp_neighbour);
  add(largest_sum, o.largest_sum);
}

const char* ConfidentRelationName(int index) {
  static const char* const kNames[] = {"the next token", "the previous token", "the word itself", "[CLS]", "[SEP]", "another token"};
  return index >= 0 && index < 6 ? kNames[index] : "unknown";
}

ConfidentCounts CountConfident(const SentenceAnalysis& analysis) {
  const Activations& a = analysis.activations;
  const int32_t n = a.tokens, H = a.heads;
  const size_t K = static_cast<size_t>(a.layers) * H;
  ConfidentCounts c;
  c.wins.assign(K, 0);
  c.value_weighted_wins.assign(K, 0);
  c.content_wins.assign(K, 0);
  c.sharp_neighbour.assign(K, 0);
  c.largest_sum.assign(K, 0.0);
  std::vector<std::vector<RowStats>> rows(K);
  std::vector<bool> content_head(K);
  for (size_t k = 0; k < K; ++k) {
    rows[k] = ComputeRowStats(a, static_cast<int32_t>(k) / H, static_cast<int32_t>(k) % H);
    const HeadLabel label = analysis.head_profiles.size() == K ? analysis.head_profiles[k].Label() : HeadLabel::kMixed;
    content_head[k] = label != HeadLabel::kPreviousToken && label != HeadLabel::kNextToken &&
                      label != HeadLabel::kSelf && label != HeadLabel::kSink;
  }
  const auto role = [&](int32_t j) { return analysis.roles[static_cast<size_t>(j)]; };
  const auto word = [&](int32_t j) { return analysis.encoding.tokens[static_cast<size_t>(j)].word; };
  const bool norms = a.value_norms.size() == K * static_cast<size_t>(n);
  for (int32_t i = 0; i < n; ++i) {
    if (role(i) != TokenRole::kOrdinary) continue;
    ++c.words;
    // The sharpest of a list of heads: the first of equals, as the page's sharpestOf.
    size_t best = 0, best_content_row = K, best_content = K;
    for (size_t k = 0; k < K; ++k) {
      const RowStats& r = rows[k][static_cast<size_t>(i)];
      if (r.ratio_to_uniform > rows[best][static_cast<size_t>(i)].ratio_to_uniform) best = k;
      const float* row = a.AttentionRow(static_cast<int32_t>(k) / H, static_cast<int32_t>(k) % H, i);
      const float before = i > 0 ? row[i - 1] : 0.0f, after = i + 1 < n ? row[i + 1] : 0.0f;
      c.sharp_neighbour[k] += std::max(before, after) >= kSharpWeight;
      c.largest_sum[k] += r.max;
      if (!content_head[k]) continue;
      const int32_t j = r.argmax;
      const bool content_row = std::abs(j - i) > 1 && role(j) == TokenRole::kOrdinary && word(j) != word(i);
      const auto sharper = [&](size_t current) {
        return current == K || r.ratio_to_uniform > rows[current][static_cast<size_t>(i)].ratio_to_uniform;
      };
      if (content_row && sharper(best_content_row)) best_content_row = k;
      if (sharper(best_content)) best_content = k;
    }
    const RowStats& top = rows[best][static_cast<size_t>(i)];
    const int32_t j = top.argmax;
    const int relation = j == i + 1 ? 0 : j == i - 1 ? 1 : j == i ? 2 : role(j) == TokenRole::kCls ? 3 : role(j) == TokenRole::kSep ? 4 : 5;
    ++c.relations[relation];
    ++c.wins[best];
    c.ratio_sum += top.ratio_to_uniform;
    if (relation <= 1) {
      ++c.positional;
      c.neighbour_word += role(j) == TokenRole::kOrdinary && word(j) != word(i);
    }
    const size_t content = best_content_row != K ? best_content_row : best_content != K ? best_content : best;
    c.content_rows += best_content_row != K;
    ++c.content_wins[content];
    c.content_ratio_sum += rows[content][static_cast<size_t>(i)].ratio_to_uniform;
    if (!norms) continue;
    // Value-weighted: in double, as the page computes it from the float32 arrays.
    double best_ratio = -1;
    size_t vw = 0;
    int32_t vw_argmax = 0;
    for (size_t k = 0; k < K; ++k) {
      const float* row = a.AttentionRow(static_cast<int32_t>(k) / H, static_cast<int32_t>(k) % H, i);
      const float* norm = a.value_norms.data() + k * static_cast<size_t>(n);
      double total = 0, largest = -1;
      int32_t argmax = 0;
      for (int32_t t = 0; t < n; ++t) {
        const double w = static_cast<double>(row[t]) * static_cast<double>(norm[t]);
        total += w;
        if (w > largest) {
          largest = w;
          argmax = t;
        }
      }
      const double ratio = total > 0 ? (largest / total) * n : 0;
      if (k == 0 || ratio > best_ratio) {
        best_ratio = ratio;
        vw = k;
        vw_argmax = argmax;
      }
    }
    ++c.value_weighted_wins[vw];
    c.value_weighted_positional += std::abs(vw_argmax - i) == 1;
  }
  return c;
}

Status ProfileSentences(LoadedModel& model, const std::vector<std::string>& sentences,
                        const stats::BootstrapOptions& bootstrap, SetProfile* out,
                        const std::function<void(size_t, size_t)>& progress) {
  if (sentences.empty()) return Status::Error("the sentence set is empty; give at least one sentence");
  AnalysisOptions options;
  options.outputs = kOutputHeadProfiles | kOutputValueNorms;
  SentenceAnalysis analysis;
  out->sentences = static_cast<int32_t>(sentences.size());
  out->per_sentence.clear();
  out->confident_per_sentence.clear();
  out->confident = ConfidentCounts();
  for (size_t s = 0; s < sentences.size(); ++s) {
    Status status = AnalyzeText(model, sentences[s], options, &analysis);
    if (!status.ok()) return Status::Error("sentence " + std::to_string(s + 1) + ": " + status.message());
    out->per_sentence.push_back(analysis.head_profiles);
    out->confident_per_sentence.push_back(CountConfident(analysis));
    out->confident.Merge(out->confident_per_sentence.back());
    if (progress) progress(s + 1, sentences.size());
  }
  const size_t heads = out->per_sentence[0].size();
  const auto resamples = stats::ClusterResamples(static_cast<uint32_t>(sentences.size()), bootstrap);
  {
    // The confident shares and each head's sharp-neighbour share, over the same resamples.
    std::vector<std::vector<double>> resampled(3 + heads);
    for (const auto& draw : resamples) {
      ConfidentCounts sum;
      for (uint32_t s : draw) sum.Merge(out->confident_per_sentence[s]);
      const int64_t word_rows = sum.words;
      resampled[0].push_back(Ratio(sum.positional, word_rows));
      resampled[1].push_back(Ratio(sum.neighbour_word, word_rows));
      resampled[2].push_back(Ratio(sum.value_weighted_positional, word_rows));
      for (size_t k = 0; k < heads; ++k) {
        resampled[3 + k].push_back(Ratio(k < sum.sharp_neighbour.size() ? sum.sharp_neighbour[k] : 0, word_rows));
      }
    }
    const ConfidentCounts& c = out->confident;
    out->positional_share = FromResamples(Ratio(c.positional, c.words), resampled[0], bootstrap.level);
    out->neighbour_word_share = FromResamples(Ratio(c.neighbour_word, c.words), resampled[1], bootstrap.level);
    out->value_weighted_share = FromResamples(Ratio(c.value_weighted_positional, c.words), resampled[2], bootstrap.level);
    out->sharp_neighbour_share.clear();
    for (size_t k = 0; k < heads; ++k) {
      out->sharp_neighbour_share.push_back(FromResamples(Ratio(c.sharp_neighbour[k], c.words), resampled[3 + k], bootstrap.level));
    }
  }
  const auto& shares = ProfileShares();
  out->heads.assign(heads, HeadSetProfile());
  for (size_t k = 0; k < heads; ++k) {
    HeadSetProfile& head = out->heads[k];
    for (const auto& sentence : out->per_sentence) head.counts.Merge(sentence[k]);
    head.label = head.counts.Label();
    std::vector<std::vector<double>> resampled(shares.size() + 2);
    int64_t same_label = 0;
    for (const auto& draw : resamples) {
      HeadProfile sum;
      for (uint32_t s : draw) sum.Merge(out->per_sentence[s][k]);
      same_label += sum.Label() == head.label;
      for (size_t q = 0; q < shares.size(); ++q) {
        resampled[q].push_back(Ratio(shares[q].numerator(sum), shares[q].denominator(sum)));
      }
      resampled[shares.size()].push_back(sum.mean_normalized_entropy());
      resampled[shares.size() + 1].push_back(sum.mean_ratio_to_uniform());
    }
    head.label_stability = resamples.empty() ? 1.0 : Ratio(same_label, static_cast<int64_t>(resamples.size()));
    for (size_t q = 0; q < shares.size(); ++q) {
      head.shares.push_back(FromResamples(
          Ratio(shares[q].numerator(head.counts), shares[q].denominator(head.counts)), resampled[q], bootstrap.level));
    }
    head.mean_normalized_entropy =
        FromResamples(head.counts.mean_normalized_entropy(), resampled[shares.size()], bootstrap.level);
    head.mean_ratio_to_uniform =
        FromResamples(head.counts.mean_ratio_to_uniform(), resampled[shares.size() + 1], bootstrap.level);
  }
  return Status::Ok();
}

bool IsWholeWord(const SentenceAnalysis& analysis, int32_t position) {
  const int32_t n = analysis.tokens();
  if (position < 0 || position >= n) return false;
  if (analysis.roles[static_cast<size_t>(position)] != TokenRole::kOrdinary) return false;
  const int32_t word = analysis.encoding.tokens[static_cast<size_t>(position)].word;
  int32_t pieces = 0;
  for (const Token& t : analysis.encoding.tokens) pieces += t.word == word;
  return pieces == 1;
}

int32_t PositionClass(const SentenceAnalysis& analysis, int32_t position) {
  const int32_t n = analysis.tokens();
  const auto role = [&](int32_t i) { return i >= 0 && i < n ? analysis.roles[static_cast<size_t>(i)] : TokenRole::kOrdinary; };
  const TokenRole before = role(position - 1), after = role(position + 1);
  const int32_t b = before == TokenRole::kCls ? 0 : before == TokenRole::kPunctuation ? 1 : 2;
  const int32_t a = after == TokenRole::kPunctuation ? 0 : after == TokenRole::kSep ? 1 : 2;
  return b * 3 + a;
}

std::string PositionClassName(int32_t position_class) {
  static const char* const kBefore[] = {"after [CLS]", "after punctuation", "after another token"};
  static const char* const kAfter[] = {"before punctuation", "before [SEP]", "before another token"};
  if (position_class < 0 || position_class >= kPositionClasses) return "unknown";
  return std::string(kBefore[position_class / 3]) + ", " + kAfter[position_class % 3];
}

Status MeanHeadContexts(LoadedModel& model, const std::vector<std::string>& sentences,
                        std::vector<float>* means, int64_t* tokens) {
  if (sentences.empty()) return Status::Error("the sentence set is empty; give at least one sentence");
  const ModelConfig& c = model.model().config();
  const size_t L = c.num_hidden_layers, H = c.num_attention_heads, d = c.hidden_size, d_head = d / H;
  std::vector<double> sums(L * H * d_head, 0.0);
  int64_t count = 0;
  SentenceAnalysis analysis;
  AnalysisOptions options;
  options.outputs = kOutputValues;
  for (size_t s = 0; s < sentences.size(); ++s) {
    Status status = AnalyzeText(model, sentences[s], options, &analysis);
    if (!status.ok()) return Status::Error("sentence " + std::to_string(s + 1) + ": " + status.message());
    const Activations& a = analysis.activations;
    const size_t n = static_cast<size_t>(a.tokens);
    for (size_t l = 0; l < L; ++l) {
      const float* layer = a.contexts.data() + l * n * d;
      for (size_t i = 0; i < n; ++i) {
        // Head h's slice of token i's context is columns [h d_head, (h+1) d_head): laid out as
        // (H, d_head), the same order as sums' (l, h, c).
        for (size_t k = 0; k < d; ++k) sums[l * d + k] += layer[i * d + k];
      }
    }
    count += static_cast<int64_t>(n);
  }
  means->assign(sums.size(), 0.0f);
  for (size_t k = 0; k < sums.size(); ++k) (*means)[k] = static_cast<float>(sums[k] / static_cast<double>(count));
  if (tokens) *tokens = count;
  return Status::Ok();
}

Status MeasureContributions(LoadedModel& model, const std::vector<std::string>& sentences,
                            std::vector<WordContribution>* out,
                            const std::function<void(size_t, size_t)>& progress, size_t first,
                            const std::vector<float>& replacements) {
  if (sentences.empty()) return Status::Error("the sentence set is empty; give at least one sentence");
  const ModelConfig& config = model.model().config();
  const size_t heads = size_t{config.num_hidden_layers} * config.num_attention_heads;
  out->clear();
  SentenceAnalysis plain, masked;
  std::vector<Activations> removed;  // (L * H): one pass per removed head
  AnalysisOptions plain_options;
  plain_options.outputs = 0;
  for (size_t s = 0; s < sentences.size(); ++s) {
    const std::string where = "sentence " + std::to_string(first + s + 1) + ": ";
    Status status = AnalyzeText(model, sentences[s], plain_options, &plain);
    if (!status.ok()) return Status::Error(where + status.message());
    for (int32_t i = 0; i < plain.tokens(); ++i) {
      if (!IsWholeWord(plain, i)) continue;
      WordContribution w;
      w.sentence = static_cast<int32_t>(first + s);
      w.token = i;
      w.position_class = PositionClass(plain, i);
      w.id = plain.encoding.tokens[static_cast<size_t>(i)].id;
      w.word = plain.encoding.tokens[static_cast<size_t>(i)].text;
      AnalysisOptions options = plain_options;
      options.masked_positions = {i};
      status = AnalyzeText(model, sentences[s], options, &masked);
      if (!status.ok()) return Status::Error(where + status.message());
      const Activations& a = masked.activations;
      for (int32_t l = 0; l < a.layers; ++l) {
        for (int32_t h = 0; h < a.heads; ++h) w.attention.push_back(a.Attention(l, h).row(i).maxCoeff());
      }
      // Head k = l * H + h removed alone: the layers in front of l are those of the masked pass,
      // so each pass resumes at l from a copy of it (ForwardOptions::first_layer; the same
      // numbers as a full pass). Then the masked-LM head scores the masked pass and every
      // removal in one product (Encoder::MaskedLmLogitsBatch).
      removed.resize(heads);
      std::vector<const Activations*> passes = {&a};
      ForwardOptions forward;
      forward.removed_heads.assign(heads, 0);
      forward.replacements = replacements;
      for (int32_t l = 0; l < a.layers; ++l) {
        forward.first_layer = l;
        for (int32_t h = 0; h < a.heads; ++h) {
          const size_t k = static_cast<size_t>(l) * a.heads + h;
          removed[k] = a;
          forward.removed_heads[k] = 1;
          status = model.encoder().Forward(a.ids, &removed[k], forward);
          if (!status.ok()) return Status::Error(where + status.message());
          forward.removed_heads[k] = 0;
          passes.push_back(&removed[k]);
        }
      }
      std::vector<LoadedModel::EntryProbability> probabilities;
      status = model.ProbabilitiesOf(passes, i, w.id, &probabilities);
      if (!status.ok()) return Status::Error(where + status.message());
      w.p_full = probabilities[0].probability;
      w.rank_full = probabilities[0].rank;
      w.top1_full = probabilities[0].top1;
      for (size_t k = 0; k < heads; ++k) {
        w.p_removed.push_back(probabilities[k + 1].probability);
        w.top1_removed.push_back(probabilities[k + 1].top1);
      }
      out->push_back(std::move(w));
    }
    if (progress) progress(s + 1, sentences.size());
  }
  return Status::Ok();
}

namespace {

// Per word, what every statistic of the summary is made of; computed once.
struct WordValues {
  std::vector<double> attention, abs_effect, abs_log_effect;  // (K) each
  int32_t most_attending = 0, most_consequential = 0;
  double rho = 0;  // Spearman over heads of attention with abs_effect (NaN when undefined)
  bool predicted = false;
  int64_t survived = 0;  // heads whose removal keeps the top-1 entry
};

int32_t FirstArgmax(const std::vector<double>& v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

// The statistics that get intervals, over the words listed in `words` (a resample repeats
// some and leaves others out).
struct Resampled {
  double agreement_share, rho_per_word, rho_constant, rho_beyond, within_rho, within_rho_log, survival;
  double predicted_effect, predicted_log_effect, unpredicted_effect, unpredicted_log_effect;
};

Resampled Compute(const std::vector<WordValues>& values, const std::vector<size_t>& words, size_t heads,
                  std::vector<ContributionSummary::Head>* per_head) {
  Resampled r{};
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (words.empty()) return {nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan};
  std::vector<double> mean_attention(heads, 0.0);
  int64_t agree = 0, survived = 0;
  for (size_t w : words) {
    agree += values[w].most_attending == values[w].most_consequential;
    survived += values[w].survived;
    for (size_t k = 0; k < heads; ++k) mean_attention[k] += values[w].attention[k] / static_cast<double>(words.size());
  }
  std::vector<double> rhos, constant, beyond;
  double sums[4] = {0, 0, 0, 0};
  int64_t pairs[2] = {0, 0};
  for (size_t w : words) {
    const WordValues& v = values[w];
    const double rho_constant = stats::Spearman(mean_attention, v.abs_effect);
    if (std::isfinite(v.rho)) {
      rhos.push_back(v.rho);
      constant.push_back(rho_constant);
      beyond.push_back(v.rho - rho_constant);
    }
    const int group = v.predicted ? 0 : 1;
    for (size_t k = 0; k < heads; ++k) {
      sums[2 * group] += v.abs_effect[k];
      sums[2 * group + 1] += v.abs_log_effect[k];
    }
    pairs[group] += static_cast<int64_t>(heads);
  }
  std::vector<double> within(heads), within_log(heads), x, y, y_log;
  for (size_t k = 0; k < heads; ++k) {
    x.clear();
    y.clear();
    y_log.clear();
    for (size_t w : words) {
      x.push_back(values[w].attention[k]);
      y.push_back(values[w].abs_effect[k]);
      y_log.push_back(values[w].abs_log_effect[k]);
    }
    within[k] = stats::Spearman(x, y);
    within_log[k] = stats::Spearman(x, y_log);
    if (per_head) {
      (*per_head)[k].within_rho = within[k];
      (*per_head)[k].within_rho_log = within_log[k];
    }
  }
  r.agreement_share = Ratio(agree, static_cast<int64_t>(words.size()));
  r.rho_per_word = Mean(rhos);
  r.rho_constant = Mean(constant);
  r.rho_beyond = Mean(beyond);
  r.within_rho = Mean(within);
  r.within_rho_log = Mean(within_log);
  r.survival = Ratio(survived, static_cast<int64_t>(words.size() * heads));
  r.predicted_effect = pairs[0] ? sums[0] / static_cast<double>(pairs[0]) : nan;
  r.predicted_log_effect = pairs[0] ? sums[1] / static_cast<double>(pairs[0]) : nan;
  r.unpredicted_effect = pairs[1] ? sums[2] / static_cast<double>(pairs[1]) : nan;
  r.unpredicted_log_effect = pairs[1] ? sums[3] / static_cast<double>(pairs[1]) : nan;
  return r;
}

}  // namespace

ContributionSummary SummarizeContributions(const std::vector<WordContribution>& words,
                                           int32_t sentences, int32_t heads,
                                           const stats::BootstrapOptions& bootstrap,
                                           int32_t permutations) {
  ContributionSummary out;
  out.sentences = sentences;
  out.heads = heads;
  out.words = static_cast<int64_t>(words.size());
  const size_t K = static_cast<size_t>(std::max(0, heads));
  out.per_head.assign(K, ContributionSummary::Head());
  std::vector<WordValues> values;
  std::vector<int32_t> attending, consequential;
  std::vector<std::vector<size_t>> by_sentence(static_cast<size_t>(std::max(0, sentences)));
  for (size_t w = 0; w < words.size(); ++w) {
    const WordContribution& word = words[w];
    WordValues v;
    const double log_full = std::log(std::max(word.p_full, std::numeric_limits<double>::min()));
    for (size_t k = 0; k < K; ++k) {
      v.attention.push_back(word.attention[k]);
      v.abs_effect.push_back(std::abs(word.p_removed[k] - word.p_full));
      v.abs_log_effect.push_back(
          std::abs(std::log(std::max(word.p_removed[k], std::numeric_limits<double>::min())) - log_full));
      v.survived += word.top1_removed[k] == word.top1_full;
      ContributionSummary::Head& head = out.per_head[k];
      head.mean_attention += word.attention[k];
      head.mean_abs_effect += v.abs_effect[k];
      head.mean_abs_log_effect += v.abs_log_effect[k];
      head.top1_survival += word.top1_removed[k] == word.top1_full;
    }
    v.most_attending = FirstArgmax(v.attention);
    v.most_consequential = FirstArgmax(v.abs_effect);
    v.rho = stats::Spearman(v.attention, v.abs_effect);
    v.predicted = word.rank_full <= kPredictedRank;
    ++out.per_head[static_cast<size_t>(v.most_attending)].most_attending;
    ++out.per_head[static_cast<size_t>(v.most_consequential)].most_consequential;
    attending.push_back(v.most_attending);
    consequential.push_back(v.most_consequential);
    out.top1_correct += word.top1_full == word.id;
    (v.predicted ? out.predicted : out.unpredicted).words += 1;
    out.rho_defined += std::isfinite(v.rho);
    if (word.sentence >= 0 && word.sentence < sentences) by_sentence[static_cast<size_t>(word.sentence)].push_back(w);
    values.push_back(std::move(v));
  }
  if (words.empty()) return out;
  for (ContributionSummary::Head& head : out.per_head) {
    const double n = static_cast<double>(words.size());
    head.mean_attention /= n;
    head.mean_abs_effect /= n;
    head.mean_abs_log_effect /= n;
    head.top1_survival /= n;
  }
  out.distinct_attending = static_cast<int32_t>(std::set<int32_t>(attending.begin(), attending.end()).size());
  out.distinct_consequential = static_cast<int32_t>(std::set<int32_t>(consequential.begin(), consequential.end()).size());
  out.agreement = stats::AgreementWithNull(attending, consequential, permutations, bootstrap.seed);
  std::vector<int32_t> classes;
  for (const WordContribution& word : words) classes.push_back(word.position_class);
  out.agreement_position_kept = stats::AgreementWithNull(attending, consequential, permutations, bootstrap.seed, classes);

  std::vector<size_t> all(words.size());
  std::iota(all.begin(), all.end(), size_t{0});
  const Resampled full = Compute(values, all, K, &out.per_head);
  std::vector<std::vector<double>> resampled(11);
  std::vector<size_t> draw_words;
  for (const auto& draw : stats::ClusterResamples(static_cast<uint32_t>(by_sentence.size()), bootstrap)) {
    draw_words.clear();
    for (uint32_t s : draw) draw_words.insert(draw_words.end(), by_sentence[s].begin(), by_sentence[s].end());
    const Resampled r = Compute(values, draw_words, K, nullptr);
    const double items[11] = {r.agreement_share, r.rho_per_word, r.rho_constant, r.rho_beyond, r.within_rho,
                              r.within_rho_log, r.survival, r.predicted_effect, r.predicted_log_effect,
                              r.unpredicted_effect, r.unpredicted_log_effect};
    for (size_t q = 0; q < 11; ++q) resampled[q].push_back(items[q]);
  }
  const double level = bootstrap.level;
  out.agreement_share = FromResamples(full.agreement_share, resampled[0], level);
  out.rho_per_word = FromResamples(full.rho_per_word, resampled[1], level);
  out.rho_constant_attention = FromResamples(full.rho_constant, resampled[2], level);
  out.rho_beyond_head = FromResamples(full.rho_beyond, resampled[3], level);
  out.within_rho = FromResamples(full.within_rho, resampled[4], level);
  out.within_rho_log = FromResamples(full.within_rho_log, resampled[5], level);
  out.top1_survival = FromResamples(full.survival, resampled[6], level);
  out.predicted.mean_abs_effect = FromResamples(full.predicted_effect, resampled[7], level);
  out.predicted.mean_abs_log_effect = FromResamples(full.predicted_log_effect, resampled[8], level);
  out.unpredicted.mean_abs_effect = FromResamples(full.unpredicted_effect, resampled[9], level);
  out.unpredicted.mean_abs_log_effect = FromResamples(full.unpredicted_log_effect, resampled[10], level);
  return out;
}

// ---- Lenses over a set ----

const char* SetLensName(int lens) {
  if (lens == kDistanceBaseline) return "distance";
  return lens >= 0 && lens < kFaithfulnessLenses ? FaithfulnessLensName(static_cast<FaithfulnessLens>(lens)) : "";
}

const char* ShareReadingName(int reading) {
  static const char* const kNames[] = {"attention", "weighted_layer", "alti"};
  return reading >= 0 && reading < kShareReadings ? kNames[reading] : "";
}

const char* ShareCategoryName(int category) {
  static const char* const kNames[] = {"cls", "sep", "punctuation", "self"};
  return category >= 0 && category < kShareCategories ? kNames[category] : "";
}

namespace {

// Adds one sentence's share and mixing sums from its unmasked lenses.
void AddShareSums(const SentenceAnalysis& analysis, const Lenses& lenses, SentenceLensSums* sums) {
  const Activations& a = analysis.activations;
  const int32_t L = a.layers, n = a.tokens;
  const size_t nn = static_cast<size_t>(n) * static_cast<size_t>(n);
  sums->rows = 0;
  sums->shares.assign(static_cast<size_t>(kShareReadings) * kShareCategories * L, 0.0);
  sums->mixing_ratio.assign(static_cast<size_t>(L), 0.0);
  const auto role = [&](int32_t j) { return analysis.roles[static_cast<size_t>(j)]; };
  for (int32_t i = 0; i < n; ++i) sums->rows += role(i) == TokenRole::kOrdinary;
  std::vector<double> row(static_cast<size_t>(n));
  for (int32_t l = 0; l < L; ++l) {
    const RowMajorMatrix attention = HeadAverage(a, l);
    for (int32_t i = 0; i < n; ++i) {
      if (role(i) != TokenRole::kOrdinary) continue;
      sums->mixing_ratio[static_cast<size_t>(l)] += lenses.mixing_ratio[static_cast<size_t>(l) * n + i];
      for (int r = 0; r < kShareReadings; ++r) {
        const size_t at = l * nn + static_cast<size_t>(i) * n;
        double total = 0;
        for (int32_t j = 0; j < n; ++j) {
          row[static_cast<size_t>(j)] = r == 0   ? attention(i, j)
                                        : r == 1 ? lenses.weighted_layer[at + j]
                                                 : lenses.alti[at + j];
          total += row[static_cast<size_t>(j)];
        }
        if (!(total > 0)) continue;
        double category[kShareCategories] = {0, 0, 0, row[static_cast<size_t>(i)] / total};
        for (int32_t j = 0; j < n; ++j) {
          const double share = row[static_cast<size_t>(j)] / total;
          if (role(j) == TokenRole::kCls) category[0] += share;
          if (role(j) == TokenRole::kSep) category[1] += share;
          if (role(j) == TokenRole::kPunctuation) category[2] += share;
        }
        for (int c = 0; c < kShareCategories; ++c) {
          sums->shares[(static_cast<size_t>(r) * kShareCategories + c) * L + l] += category[c];
        }
      }
    }
  }
}

}  // namespace

Status MeasureLensFaithfulness(LoadedModel& model, const std::vector<std::string>& sentences,
                               std::vector<TargetFaithfulness>* targets, std::vector<SentenceLensSums>* per_sentence,
                               const std::function<void(size_t, size_t)>& progress, size_t first) {
  if (sentences.empty()) return Status::Error("the sentence set is empty; give at least one sentence");
  targets->clear();
  per_sentence->clear();
  SentenceAnalysis plain, masked;
  AnalysisOptions options;
  options.outputs = kOutputValues;
  Lenses lenses;
  for (size_t s = 0; s < sentences.size(); ++s) {
    const std::string where = "sentence " + std::to_string(first + s + 1) + ": ";
    options.masked_positions.clear();
    Status status = AnalyzeText(model, sentences[s], options, &plain);
    LensOptions plain_lenses;  // weighted and mixing; no flow, value zeroing or target
    if (status.ok()) status = ComputeLenses(model, plain, plain_lenses, &lenses);
    if (!status.ok()) return Status::Error(where + status.message());
    SentenceLensSums sums;
    AddShareSums(plain, lenses, &sums);
    per_sentence->push_back(std::move(sums));
    for (int32_t t = 0; t < plain.tokens(); ++t) {
      if (!IsWholeWord(plain, t)) continue;
      options.masked_positions = {t};
      status = AnalyzeText(model, sentences[s], options, &masked);
      LensOptions target_lenses;
      target_lenses.target = t;
      if (status.ok()) status = ComputeLenses(model, masked, target_lenses, &lenses);
      if (!status.ok()) return Status::Error(where + status.message());
      TargetFaithfulness x;
      x.sentence = static_cast<int32_t>(first + s);
      x.token = t;
      x.id = plain.encoding.tokens[static_cast<size_t>(t)].id;
      x.word = plain.encoding.tokens[static_cast<size_t>(t)].text;
      x.top1 = lenses.target_top1;
      x.logprob = lenses.target_logprob;
      x.occlusion = lenses.occlusion;
      std::copy(std::begin(lenses.faithfulness), std::end(lenses.faithfulness), x.rho);
      // The baseline: -|j - t| over the same positions.
      std::vector<double> effect, nearness;
      for (int32_t j = 0; j < plain.tokens(); ++j) {
        const double o = x.occlusion[static_cast<size_t>(j)];
        if (std::isnan(o)) continue;
        effect.push_back(o);
        nearness.push_back(-std::abs(static_cast<double>(j - t)));
      }
      x.positions = static_cast<int32_t>(effect.size());
      x.rho[kDistanceBaseline] = SpearmanRho(effect, nearness);
      targets->push_back(std::move(x));
    }
    if (progress) progress(s + 1, sentences.size());
  }
  return Status::Ok();
}

namespace {

// The statistics that get intervals, over the targets and sentences of one draw (a resample
// repeats some sentences and leaves others out).
struct LensDraw {
  double mean_rho[kSetLenses];
  std::vector<double> differences;  // LensSetSummary::differences order
  std::vector<double> shares;       // (kShareReadings, kShareCategories, L)
  std::vector<double> mixing_ratio; // (L)
};

LensDraw ComputeLensDraw(const std::vector<TargetFaithfulness>& targets, const std::vector<SentenceLensSums>& sums,
                         const std::vector<std::vector<size_t>>& by_sentence, const std::vector<uint32_t>& draw,
                         const std::vector<std::pair<int, int>>& pairs, int32_t layers) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  LensDraw out;
  double rho_sum[kSetLenses] = {};
  int64_t rho_count[kSetLenses] = {};
  std::vector<double> difference_sum(pairs.size(), 0.0);
  std::vector<int64_t> difference_count(pairs.size(), 0);
  const size_t share_size = static_cast<size_t>(kShareReadings) * kShareCategories * layers;
  std::vector<double> share_sum(share_size, 0.0), mixing_sum(static_cast<size_t>(layers), 0.0);
  int64_t rows = 0;
  for (uint32_t s : draw) {
    for (size_t w : by_sentence[s]) {
      const double* rho = targets[w].rho;
      for (int k = 0; k < kSetLenses; ++k) {
        if (std::isnan(rho[k])) continue;
        rho_sum[k] += rho[k];
        ++rho_count[k];
      }
      for (size_t p = 0; p < pairs.size(); ++p) {
        const double a = rho[pairs[p].first], b = rho[pairs[p].second];
        if (std::isnan(a) || std::isnan(b)) continue;
        difference_sum[p] += a - b;
        ++difference_count[p];
      }
    }
    const SentenceLensSums& x = sums[s];
    rows += x.rows;
    for (size_t q = 0; q < share_size; ++q) share_sum[q] += x.shares[q];
    for (int32_t l = 0; l < layers; ++l) mixing_sum[static_cast<size_t>(l)] += x.mixing_ratio[static_cast<size_t>(l)];
  }
  for (int k = 0; k < kSetLenses; ++k) out.mean_rho[k] = rho_count[k] ? rho_sum[k] / static_cast<double>(rho_count[k]) : nan;
  for (size_t p = 0; p < pairs.size(); ++p) {
    out.differences.push_back(difference_count[p] ? difference_sum[p] / static_cast<double>(difference_count[p]) : nan);
  }
  for (double v : share_sum) out.shares.push_back(rows ? v / static_cast<double>(rows) : nan);
  for (double v : mixing_sum) out.mixing_ratio.push_back(rows ? v / static_cast<double>(rows) : nan);
  return out;
}

// The first of the five lenses with the largest mean (NaN means never).
int32_t BestLens(const double* mean_rho) {
  int32_t best = 0;
  for (int32_t k = 1; k < kFaithfulnessLenses; ++k) {
    if (std::isnan(mean_rho[best]) || mean_rho[k] > mean_rho[best]) best = k;
  }
  return best;
}

}  // namespace

LensSetSummary SummarizeLensFaithfulness(const std::vector<TargetFaithfulness>& targets,
                                         const std::vector<SentenceLensSums>& per_sentence, int32_t layers,
                                         const stats::BootstrapOptions& bootstrap) {
  LensSetSummary out;
  out.sentences = static_cast<int32_t>(per_sentence.size());
  out.layers = layers;
  out.targets = static_cast<int64_t>(targets.size());
  std::vector<std::vector<size_t>> by_sentence(per_sentence.size());
  for (size_t w = 0; w < targets.size(); ++w) {
    const TargetFaithfulness& x = targets[w];
    for (int k = 0; k < kSetLenses; ++k) (std::isnan(x.rho[k]) ? out.lenses[k].undefined : out.lenses[k].defined) += 1;
    if (x.sentence >= 0 && static_cast<size_t>(x.sentence) < by_sentence.size()) {
      by_sentence[static_cast<size_t>(x.sentence)].push_back(w);
    }
  }
  for (const SentenceLensSums& s : per_sentence) out.rows += s.rows;
  std::vector<std::pair<int, int>> pairs;
  for (int a = 0; a < kSetLenses; ++a) {
    for (int b = a + 1; b < kSetLenses; ++b) pairs.push_back({a, b});
  }
  std::vector<uint32_t> everything(per_sentence.size());
  std::iota(everything.begin(), everything.end(), 0u);
  const LensDraw full = ComputeLensDraw(targets, per_sentence, by_sentence, everything, pairs, layers);
  out.best = BestLens(full.mean_rho);

  const size_t share_size = full.shares.size();
  std::vector<std::vector<double>> rho(kSetLenses), differences(pairs.size()), shares(share_size),
      minus((kShareReadings - 1) * share_size / kShareReadings), mixing(static_cast<size_t>(layers));
  int64_t best_count[kFaithfulnessLenses] = {};
  const size_t per_reading = share_size / kShareReadings;
  for (const auto& draw : stats::ClusterResamples(static_cast<uint32_t>(per_sentence.size()), bootstrap)) {
    const LensDraw d = ComputeLensDraw(targets, per_sentence, by_sentence, draw, pairs, layers);
    for (int k = 0; k < kSetLenses; ++k) rho[static_cast<size_t>(k)].push_back(d.mean_rho[k]);
    ++best_count[BestLens(d.mean_rho)];
    for (size_t p = 0; p < pairs.size(); ++p) differences[p].push_back(d.differences[p]);
    for (size_t q = 0; q < share_size; ++q) shares[q].push_back(d.shares[q]);
    for (size_t q = per_reading; q < share_size; ++q) minus[q - per_reading].push_back(d.shares[q] - d.shares[q % per_reading]);
    for (int32_t l = 0; l < layers; ++l) mixing[static_cast<size_t>(l)].push_back(d.mixing_ratio[static_cast<size_t>(l)]);
  }
  const double level = bootstrap.level;
  const double resamples = static_cast<double>(std::max(1, bootstrap.resamples));
  for (int k = 0; k < kSetLenses; ++k) {
    out.lenses[k].mean_rho = FromResamples(full.mean_rho[k], rho[static_cast<size_t>(k)], level);
    out.lenses[k].best_share = k < kFaithfulnessLenses ? static_cast<double>(best_count[k]) / resamples : 0.0;
  }
  for (size_t p = 0; p < pairs.size(); ++p) {
    LensSetSummary::Difference d;
    d.a = pairs[p].first;
    d.b = pairs[p].second;
    for (const TargetFaithfulness& x : targets) d.targets += !std::isnan(x.rho[d.a]) && !std::isnan(x.rho[d.b]);
    d.mean = FromResamples(full.differences[p], differences[p], level);
    out.differences.push_back(d);
  }
  for (size_t q = 0; q < share_size; ++q) out.shares.push_back(FromResamples(full.shares[q], shares[q], level));
  for (size_t q = per_reading; q < share_size; ++q) {
    out.share_minus_attention.push_back(
        FromResamples(full.shares[q] - full.shares[q % per_reading], minus[q - per_reading], level));
  }
  for (int32_t l = 0; l < layers; ++l) {
    out.mixing_ratio.push_back(FromResamples(full.mixing_ratio[static_cast<size_t>(l)], mixing[static_cast<size_t>(l)], level));
  }
  return out;
}

}  // namespace attn
