// Strict reading of request objects: every read names its field path, so that an error
// can say exactly which input is wrong; unread keys are errors with a suggestion.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "trainmem/error.hpp"
#include "trainmem/limits.hpp"
#include "trainmem/vocabulary.hpp"
#include "util/checked.hpp"  // checked_mul, checked_add, index_path (the core's, re-exported)

namespace trainmem {

using json = nlohmann::json;

// Parses request text strictly: invalid JSON -> invalid_json; a number beyond double range
// (1e400) -> out_of_range naming its field path; a key twice in one object -> invalid_json
// naming it; deeper than kMaxRequestDepth or more than kMaxRequestValues values -> too_large.
// compact_chain (placement requests): `chain.layers` is read into packed records when it can
// be (io/compact_layers.hpp). Reader: io/json_parse.cpp.
json parse_request(const std::string& text, bool compact_chain = false);

// Levenshtein-closest candidate within distance 3 (or a case-insensitive match), else "".
std::string closest_match(const std::string& word, const std::vector<std::string>& candidates);

// A view of one JSON object in a request. Reads mark keys as used; finish() rejects the
// rest (typos such as `microbatch` must not be ignored silently). A key given as null is a
// value of the wrong type (invalid_type naming it), not an absent key: JSON.stringify writes
// NaN and Infinity as null, and a silent default would hide them. Exception: a pasted HF
// config.json, where transformers reads null as unset (GPT-2's "n_inner": null):
// null_as_absent(), inherited by the objects inside.
// Keys, fallbacks and value lists are C strings: every call site passes literals, and a
// std::string argument would be built (and destroyed) at each of several hundred call sites
// of the WebAssembly module (issue #7).
class Obj {
 public:
  // `path` is the dotted path of this object ("" for the request root).
  Obj(const json& j, std::string path);
  Obj(const json& j, const char* path);  // (a literal path: no string built at the call site)

  const std::string& path() const { return path_; }
  Obj& null_as_absent() {
    null_absent_ = true;
    return *this;
  }
  std::string field(const char* key) const;  // path + "." + key
  std::string field(const std::string& key) const;
  bool has(const char* key) const;         // present (null counts only without null_as_absent)
  const json& raw(const char* key) const;  // marks used; throws missing_field
  const json& json_value() const { return *j_; }
  void mark_used(const char* key) const;
  void mark_used(const std::string& key) const { used_.insert(key); }

  // Whole numbers (a JSON float with an integral value, e.g. 1e9, is accepted).
  uint64_t u64(const char* key, uint64_t min = 0, uint64_t max = UINT64_MAX) const;
  uint64_t u64_or(const char* key, uint64_t fallback, uint64_t min = 0,
                  uint64_t max = UINT64_MAX) const;
  // Finite numbers in [min, max].
  double num(const char* key, double min, double max) const;
  double num_or(const char* key, double fallback, double min, double max) const;
  bool boolean(const char* key) const;
  bool boolean_or(const char* key, bool fallback) const;
  std::string str(const char* key, size_t max_len = 256) const;
  std::string str_or(const char* key, const char* fallback, size_t max_len = 256) const;
  // A string that must be one of `allowed`; errors suggest the closest one.
  // `spellings`: further accepted names, suggested but not listed (dtype spellings).
  std::string one_of(const char* key, const std::vector<std::string>& allowed,
                     const std::vector<std::string>* spellings = nullptr) const;
  std::string one_of(const char* key, std::initializer_list<const char*> allowed) const;
  std::string one_of_or(const char* key, const std::vector<std::string>& allowed,
                        const char* fallback) const;
  std::string one_of_or(const char* key, std::initializer_list<const char*> allowed,
                        const char* fallback) const;
  Obj obj(const char* key) const;  // required nested object
  // Array of at most max_items elements (throws too_large beyond).
  const json& array(const char* key, size_t max_items) const;

  // Throws unknown_key for the first key never read, suggesting the closest known one.
  // `also_known` lists keys accepted elsewhere (for a better suggestion).
  void finish(std::initializer_list<const char*> also_known = {}) const;

 private:
  const json* j_;
  std::string path_;
  mutable std::set<std::string> used_;
  bool null_absent_ = false;
};

// A parameter that belongs to some strategies only: given with another, it is an error naming
// the strategies it applies to, rather than silently ignored.
void only_for(const Obj& obj, const char* key, const std::string& value,
              std::initializer_list<const char*> allowed);
// A checkpointing strategy's parameter: the strategies that take the key are read from
// vocab::kStrategies (its parameter bits, and for budgetBytes its budget rule); `placement`: list
// only those the placement calculator runs.
void only_for(const Obj& obj, const char* key, vocab::Strategy strategy, bool placement);

// Standalone checks on a json value at a given path.
uint64_t read_u64(const json& v, const std::string& path, uint64_t min = 0,
                  uint64_t max = UINT64_MAX);
double read_num(const json& v, const std::string& path, double min, double max);
std::string read_str(const json& v, const std::string& path, size_t max_len = 256);
// The JSON type of v as the errors name it ("number", "string", "object", ...).
std::string json_type_name(const json& v);

}  // namespace trainmem
