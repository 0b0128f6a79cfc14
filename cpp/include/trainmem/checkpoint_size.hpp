// Checkpoint size (the `checkpointSize` function) on typed structs: the bytes of a checkpoint
// from the model's tensors, the optimizer's real state layout (optimizer.hpp) and the container
// format (checkpoint_format.hpp), with the usual rule of thumb beside it. io/checkpoint_json.cpp
// reads the request and writes the result.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "trainmem/checkpoint_format.hpp"
#include "trainmem/dtype.hpp"
#include "trainmem/model.hpp"
#include "trainmem/optimizer.hpp"
#include "trainmem/vocabulary.hpp"

namespace trainmem {

struct CheckpointRequest {
  ModelDescription model;
  OptimizerSpec opt;  // read when include_optimizer
  bool has_weight_dtype = false, has_state_dtype = false;
  DType weight = DType::fp32;  // with has_weight_dtype: floating tensors are cast to it
  DType state = DType::fp32;   // with has_state_dtype: the dtype of the parameter-like states
  bool master = false;         // an fp32 master copy of every trainable parameter
  vocab::CheckpointFormat format = vocab::CheckpointFormat::raw;
  bool include_optimizer = true;
  std::string file_name = "checkpoint.pt";
  uint64_t max_shard_bytes = 0;  // safetensors: 0 = one file
};

// Storage categories of a checkpoint (indices of CheckpointResult::category_bytes).
enum class CheckpointCategory { weights, buffers, master_weights, optimizer_state };
inline constexpr int kCheckpointCategories = 4;

// The usual rule of thumb: params x copies x bytes per copy.
struct SimpleCheckpoint {
  uint64_t total_bytes = 0, weights = 0, master_weights = 0, optimizer_state = 0;
  uint64_t copies = 0;
  double bytes_per_param = 0;
  bool factored = false;  // Adafactor: the rule of thumb cannot size its factors
};

struct CheckpointFile {
  std::string name;
  uint64_t bytes = 0;
  uint64_t tensors = 0;  // sharded safetensors: tensors in this shard
  bool sharded = false;
};

struct CheckpointResult {
  uint64_t total_bytes = 0;
  vocab::CheckpointFormat format = vocab::CheckpointFormat::raw;
  uint64_t category_bytes[kCheckpointCategories] = {0, 0, 0, 0};
  uint64_t& bytes(CheckpointCategory c) { return category_bytes[static_cast<int>(c)]; }
  uint64_t bytes(CheckpointCategory c) const { return category_bytes[static_cast<int>(c)]; }
  uint64_t container_bytes = 0;  // file bytes beyond the counted storages
  // optimizer state per state name (torch and raw formats only)
  std::map<std::string, uint64_t> state_bytes, state_elements;
  uint64_t params = 0, trainable_params = 0;
  double bytes_per_param = 0;
  bool include_optimizer = true;
  OptimizerSpec opt;
  DType weight_dtype = DType::fp32;
  // torch: the zip's figures; safetensors: the sums over the shards (pickle_bytes = headers)
  ContainerSize container;
  uint64_t shards = 0;
  std::vector<CheckpointFile> files;  // torch and safetensors
  SimpleCheckpoint simple;
  bool exact = true;
  std::vector<Text> notes;
};

// Throws RequestError (too_large) naming the field when a byte count would pass 2^63.
CheckpointResult checkpoint_size(CheckpointRequest r);

}  // namespace trainmem
