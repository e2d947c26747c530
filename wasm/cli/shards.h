// Loading the shard files of a split model (model_data/README.md, "Split layout for the page")
// from a folder, or the all-rows file, for the CLI's --shards option.
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

#include "core/analysis.h"

namespace attn::cli {

// Loads every regular file in dir as a shard of model, in name order; the first failure stops
// with a status naming the file. A path that is a file is read as the all-rows file (every
// shard back to back).
inline Status LoadShardFolder(const std::string& dir, LoadedModel* model) {
  std::error_code error;
  if (std::filesystem::is_regular_file(dir, error)) {
    std::ifstream in(dir, std::ios::binary);
    const std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    if (!in.good() && !in.eof()) return Status::Error("cannot read the all-rows file '" + dir + "'");
    Status status = model->LoadShards(bytes.data(), bytes.size());
    return status.ok() ? status : Status::Error(dir + ": " + status.message());
  }
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    if (entry.is_regular_file()) files.push_back(entry.path());
  }
  if (error) return Status::Error("cannot read the shard folder '" + dir + "': " + error.message());
  if (files.empty()) return Status::Error("the shard folder '" + dir + "' holds no files");
  std::sort(files.begin(), files.end());
  for (const auto& path : files) {
    std::ifstream in(path, std::ios::binary);
    const std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    if (!in.good() && !in.eof()) return Status::Error("cannot read shard file '" + path.string() + "'");
    Status status = model->LoadShard(bytes.data(), bytes.size());
    if (!status.ok()) return Status::Error(path.string() + ": " + status.message());
  }
  return Status::Ok();
}

}  // namespace attn::cli
