// Internal to the HuggingFace tensor recipes (model/hf_recipes.cpp, hf_decoder.cpp,
// hf_llm_families.cpp): a builder that appends parameter tensors, buffers and modules to a model
// description, named as the model's state_dict() and named_modules() name them.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trainmem/model.hpp"

namespace trainmem {
namespace hf {

// Builds names with as few allocations as possible (a 70B preset is ~700 tensors and peak
// memory parses it on every call): each name is base + suffix, allocated once.
struct Builder {
  ModelDescription& m;
  void mod(const std::string& base, const char* sub = "") {
    ++m.module_count;
    m.module_name_bytes += base.size() + std::char_traits<char>::length(sub);
  }
  void mod(const char* base) {
    ++m.module_count;
    m.module_name_bytes += std::char_traits<char>::length(base);
  }
  TensorSpec& param(const std::string& base, const char* sub, std::initializer_list<uint64_t> shape,
                    const std::string& tied = std::string()) {
    m.tensors.emplace_back();
    TensorSpec& t = m.tensors.back();
    const size_t n = std::char_traits<char>::length(sub);
    t.name.reserve(base.size() + n);
    t.name.append(base).append(sub, n);
    t.shape.assign(shape);
    t.tied_to = tied;
    return t;
  }
  // nn.Linear: weight [out, in] (+ bias [out]); registers the module base + sub.
  void linear(const std::string& base, const char* sub, uint64_t in, uint64_t out, bool bias) {
    scratch.assign(base).append(sub);
    mod(scratch);
    param(scratch, ".weight", {out, in}).linear = LinearKind::linear;
    if (bias) param(scratch, ".bias", {out});
  }
  // GPT-2's Conv1D(nf, nx): weight [nx, nf] (transposed against nn.Linear), bias [nf].
  void conv1d(const std::string& base, const char* sub, uint64_t nx, uint64_t nf) {
    scratch.assign(base).append(sub);
    mod(scratch);
    param(scratch, ".weight", {nx, nf}).linear = LinearKind::conv1d;
    param(scratch, ".bias", {nf});
  }
  // The output embedding (an nn.Linear without bias), possibly tied to the input embedding.
  void head(const std::string& base, std::initializer_list<uint64_t> shape,
            const std::string& tied) {
    TensorSpec& t = param(base, ".weight", shape, tied);
    t.linear = LinearKind::linear;
    t.output_head = true;
  }
  void layer_norm(const std::string& base, const char* sub, uint64_t n, bool bias = true) {
    norm(base, sub, n, true, bias);
  }
  // A norm whose weight and bias may each be absent (OlmoLayerNorm has neither).
  void norm(const std::string& base, const char* sub, uint64_t n, bool weight, bool bias) {
    scratch.assign(base).append(sub);
    mod(scratch);
    if (weight) param(scratch, ".weight", {n});
    if (bias) param(scratch, ".bias", {n});
  }
  void embedding(const std::string& base, const char* sub, uint64_t rows, uint64_t dim) {
    scratch.assign(base).append(sub);
    mod(scratch);
    param(scratch, ".weight", {rows, dim});
  }
  void buffer(std::string name, std::vector<uint64_t> shape, DType dt, bool persistent) {
    BufferSpec b;
    b.name = std::move(name);
    b.shape = std::move(shape);
    b.dtype = dt;
    b.persistent = persistent;
    m.buffers.push_back(std::move(b));
  }
  // A rotary embedding module `name` with its inverse frequencies [dim / 2], registered
  // persistent=False (not in state_dict).
  void rotary(const std::string& name, uint64_t dim) {
    mod(name);
    buffer(name + ".inv_freq", {dim / 2}, DType::fp32, false);
  }
  // base + "." + sub (sub alone for an empty base) in a buffer of its own, so that a call
  // such as mod(join(p, "layers")) builds no temporary string.
  const std::string& join(const std::string& base, const char* sub) {
    joined.assign(base);
    if (!joined.empty()) joined += '.';
    joined += sub;
    return joined;
  }
  // The root module, and the base model's under `p` when it is not the root.
  void root_modules(const std::string& p) {
    mod("");
    if (!p.empty()) mod(p);
  }
  // The output embedding `name` [vocab, h], tied to `tied` when the config ties embeddings.
  void output_head(const char* name, const Architecture& a, uint64_t h, const std::string& tied) {
    mod(name);
    head(std::string(name), {a.vocab, h}, a.tied_embeddings ? tied : std::string());
  }
  std::string scratch, joined;
};

// a + "." + b (b alone for an empty a), as a new string.
inline std::string join(const std::string& a, std::string_view b) {
  std::string r = a;
  if (!r.empty()) r += '.';
  r += b;
  return r;
}

}  // namespace hf
}  // namespace trainmem
