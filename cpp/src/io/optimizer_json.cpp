// Reading the `optimizer` field of a request: the name is looked up once in
// vocab::kOptimizers and the domain sees only the layout enum and its settings.
#include "io/optimizer_json.hpp"

#include "trainmem/vocabulary.hpp"

namespace trainmem {
namespace {

using vocab::Optimizer;

// The layout and the name's own settings (aliases: vocab::kOptimizers).
OptimizerSpec from_name(const std::string& name) {
  const vocab::OptimizerTerm* t = vocab::find(vocab::kOptimizers, name);
  OptimizerSpec o;
  o.type = t->value;
  o.paged = t->variant == vocab::OptimizerVariant::paged;
  // seed 003's "SGD with momentum" (torch default momentum is 0)
  if (t->variant == vocab::OptimizerVariant::momentum) o.momentum = 0.9;
  o.block_size = default_block_size(o.type);
  return o;
}

// The settings of the object form that the layout reads; the others stay unread (finish()
// names them).
void read_settings(const Obj& obj, const std::string& path, OptimizerSpec* o) {
  const bool sgd = o->type == Optimizer::sgd, rms = o->type == Optimizer::rmsprop;
  const bool torchao = is_torchao_low_bit(*o);
  const bool adam = o->type == Optimizer::adam || o->type == Optimizer::adamw || torchao;
  if (sgd || rms) o->momentum = obj.num_or("momentum", o->momentum, 0, 1);
  if (sgd) o->nesterov = obj.boolean_or("nesterov", false);
  if (adam) o->amsgrad = obj.boolean_or("amsgrad", false);
  if (rms) o->centered = obj.boolean_or("centered", false);
  if (o->type == Optimizer::adafactor && obj.has("beta1")) {
    o->has_beta1 = true;
    o->beta1 = obj.num("beta1", 0, 1);
  } else if (o->type == Optimizer::adafactor) {
    obj.mark_used("beta1");
  }
  if (o->type == Optimizer::adam_8bit) {
    o->block_size = obj.u64_or("blockSize", 2048, 1, 1ULL << 32);
    o->min_8bit_size = obj.u64_or("min8bitSize", 4096, 0, kMaxExactJson);
  }
  if (torchao) {
    o->block_size = obj.u64_or("blockSize", o->block_size, 1, 1ULL << 32);
    if (o->type == Optimizer::torchao_adamw_4bit && o->block_size % 2 != 0)
      fail(code::kOutOfRange, path + ".blockSize",
           Message{"error.optimizer.blockSize", {{"path", path}}});
  }
  if (obj.has("weightDecay")) {
    obj.num("weightDecay", 0, 1e6);
    o->weight_decay_set = true;
  } else {
    obj.mark_used("weightDecay");
  }
}

}  // namespace

OptimizerSpec parse_optimizer(const Obj& parent, const char* key) {
  const json& v = parent.raw(key);
  if (v.is_string()) return from_name(parent.one_of(key, optimizer_names()));
  const std::string path = parent.field(key);
  Obj obj(v, path);
  OptimizerSpec o = from_name(obj.one_of("name", optimizer_names()));
  read_settings(obj, path, &o);
  obj.finish({"momentum", "nesterov", "amsgrad", "centered", "beta1", "blockSize", "min8bitSize"});
  if (o.nesterov && o.momentum == 0)
    fail(code::kInconsistent, path + ".nesterov",
         Message{"error.optimizer.nesterov", {{"path", path}}});
  return o;
}

}  // namespace trainmem
