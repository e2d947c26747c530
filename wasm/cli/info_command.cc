// attention-cli info: what a model file holds, without running it: its name, provenance,
// configuration, precision, size and checksum, and every tensor with its dtype, shape, scale
// group and bytes. Loading validates the whole file first, so a file this prints is one the
// engine accepts; a broken one gets the loader's message and exit status 1.
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/json.h"
#include "cli/text.h"
#include "core/analysis.h"
#include "core/model_file.h"

namespace attn::cli {
namespace {

constexpr const char* kUsage = "usage: attention-cli info --model FILE [--json]\n";

std::string ShapeText(const TensorSpec& spec) {
  return spec.ndim == 1 ? std::to_string(spec.shape[0])
                        : std::to_string(spec.shape[0]) + " x " + std::to_string(spec.shape[1]);
}

void WriteJson(FILE* out, const Model& model) {
  const ModelConfig& c = model.config();
  std::fputs("{\"name\":", out);
  WriteJsonString(out, model.name());
  std::fputs(",\"precision\":", out);
  WriteJsonString(out, model.precision());
  std::fprintf(out,
               ",\"file_bytes\":%llu,\"crc32\":%lu,\"parameters\":%llu,\"config\":{\"vocab_size\":%u,"
               "\"hidden_size\":%u,\"num_hidden_layers\":%u,\"num_attention_heads\":%u,"
               "\"intermediate_size\":%u,\"max_position_embeddings\":%u,\"type_vocab_size\":%u,"
               "\"layer_norm_eps\":",
               static_cast<unsigned long long>(model.file_bytes()),
               static_cast<unsigned long>(model.crc32()),
               static_cast<unsigned long long>(model.parameter_count()), c.vocab_size, c.hidden_size,
               c.num_hidden_layers, c.num_attention_heads, c.intermediate_size,
               c.max_position_embeddings, c.type_vocab_size);
  WriteJsonFloat(out, c.layer_norm_eps);
  // The provenance is the file's text, checked as UTF-8 but not parsed, so it goes out as a string.
  std::fputs("},\"provenance\":", out);
  WriteJsonString(out, model.provenance());
  std::fputs(",\"tensors\":[", out);
  bool first = true;
  for (const TensorInfo& t : model.tensors()) {
    std::fputs(first ? "{\"name\":" : ",{\"name\":", out);
    first = false;
    WriteJsonString(out, t.spec.name);
    std::fprintf(out, ",\"dtype\":\"%s\",\"shape\":[%u", DTypeName(t.dtype), t.spec.shape[0]);
    if (t.spec.ndim == 2) std::fprintf(out, ",%u", t.spec.shape[1]);
    std::fprintf(out, "],\"group_size\":%u,\"bytes\":%llu}", t.group_size,
                 static_cast<unsigned long long>(t.byte_count));
  }
  std::fputs("]}\n", out);
}

void WriteText(FILE* out, const Model& model) {
  const ModelConfig& c = model.config();
  std::fprintf(out, "name        %s\n", Printable(model.name()).c_str());
  std::fprintf(out, "shape       %u layers, hidden %u, %u heads of %u, intermediate %u, %u positions, %u token types, vocabulary %u\n",
               c.num_hidden_layers, c.hidden_size, c.num_attention_heads, c.head_size(),
               c.intermediate_size, c.max_position_embeddings, c.type_vocab_size, c.vocab_size);
  std::fprintf(out, "precision   %s\n", Printable(model.precision()).c_str());
  std::fprintf(out, "file        %llu bytes, CRC-32 %08lx, %llu parameters\n",
               static_cast<unsigned long long>(model.file_bytes()),
               static_cast<unsigned long>(model.crc32()),
               static_cast<unsigned long long>(model.parameter_count()));
  std::fprintf(out, "provenance  %s\n\n", Printable(model.provenance()).c_str());
  std::fprintf(out, "%-52s %-5s %-12s %10s %12s\n", "tensor", "dtype", "shape", "group", "bytes");
  for (const TensorInfo& t : model.tensors()) {
    std::fprintf(out, "%-52s %-5s %-12s %10u %12llu\n", Printable(t.spec.name).c_str(),
                 DTypeName(t.dtype), ShapeText(t.spec).c_str(), t.group_size,
                 static_cast<unsigned long long>(t.byte_count));
  }
}

}  // namespace

int RunInfo(int argc, char** argv) {
  std::string model_path;
  bool json = false;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--model" && i + 1 < argc) {
      model_path = argv[++i];
    } else if (arg == "--json") {
      json = true;
    } else {
      std::fprintf(stderr, "attention-cli info: unexpected argument '%s'.\n%s", arg.c_str(), kUsage);
      return 2;
    }
  }
  if (model_path.empty()) {
    std::fprintf(stderr, "attention-cli info: --model FILE is missing.\n%s", kUsage);
    return 2;
  }
  // The whole load the engine does (the vocabulary into a tokenizer, the activation budget), not
  // only the file's own checks: a file info prints is one analyze and the page accept.
  std::unique_ptr<LoadedModel> loaded;
  const Status status = LoadedModel::FromFile(model_path, &loaded);
  if (!status.ok()) {
    std::fprintf(stderr, "attention-cli info: %s\n", Printable(status.message()).c_str());
    return 1;
  }
  if (json) {
    WriteJson(stdout, loaded->model());
  } else {
    WriteText(stdout, loaded->model());
  }
  return 0;
}

}  // namespace attn::cli
