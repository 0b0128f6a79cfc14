// Container formats of checkpoint files, modelled byte for byte:
//  * torch.save (zip, torch 1.13 writer: PyTorchStreamWriter over miniz, 64-byte aligned
//    records, pickle protocol 2 with persistent ids for storages),
//  * safetensors (8-byte header length, JSON header padded to 8 bytes, raw data).
// See docs/checkpoint-size.md for the derivation and the measurements.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "trainmem/dtype.hpp"
#include "trainmem/optimizer.hpp"

namespace trainmem {

// One tensor entry of a state dict (a name and a view of a storage).
struct DictTensor {
  const std::string* name = nullptr;  // state_dict key (not owned)
  const std::vector<uint64_t>* shape = nullptr;
  DType dtype = DType::fp32;
  int64_t storage = -1;  // index into the storage table; equal indices share one storage
};

struct StorageInfo {
  uint64_t bytes = 0;
  uint64_t numel = 0;
  DType dtype = DType::fp32;
};

// What torch.save writes: a model state dict (with `_metadata` for every module) and, when
// present, an optimizer state dict {'state': {i: {...}}, 'param_groups': [{...}]}.
struct TorchSaveInput {
  std::string file_name = "checkpoint.pt";  // the zip's folder is its base name
  std::vector<DictTensor> model;            // state_dict order
  uint64_t module_count = 1;                // modules in _metadata ('' included)
  uint64_t module_name_bytes = 0;           // sum of their names' lengths
  bool wrap = true;  // {'model': sd, 'optimizer': osd}; false: torch.save(sd)
  bool has_optimizer = false;
  // optimizer state per parameter index (params in order); tensors reference storages.
  struct StateEntry {
    const char* key;
    StateKind kind;
    const std::vector<uint64_t>* shape;
    DType dtype;
    int64_t storage;
  };
  std::vector<std::vector<StateEntry>> optimizer_state;
  uint64_t optimizer_params = 0;  // length of param_groups[0]['params']
  std::vector<GroupEntry> param_group;
  std::vector<StorageInfo> storages;
};

struct ContainerSize {
  uint64_t file_bytes = 0;
  uint64_t payload_bytes = 0;   // storage bytes
  uint64_t pickle_bytes = 0;    // data.pkl (torch) or JSON header (safetensors)
  uint64_t records = 0;         // zip records (torch) or tensors (safetensors)
  uint64_t padding_bytes = 0;   // alignment padding
  uint64_t overhead_bytes = 0;  // file - payload
};

ContainerSize torch_save_size(const TorchSaveInput& in);

// safetensors: tensors (tied storages once), `metadata` entries as {"format": "pt"}.
struct SafetensorsEntry {
  const std::string* name;
  const std::vector<uint64_t>* shape;
  DType dtype;
};
ContainerSize safetensors_size(const std::vector<SafetensorsEntry>& tensors, bool format_pt);

}  // namespace trainmem
