// Optimizer state layouts. Sources (read for each layout; measured in
// tests/fixtures/torch_checkpoints.json with torch 1.13):
//   torch/optim/{sgd,adam,adamw,adagrad,rmsprop}.py (torch 1.13 and 2.x),
//   torch/optim/_adafactor.py (torch >= 2.5), transformers/optimization.py (Adafactor),
//   lucidrains/lion-pytorch lion_pytorch.py, bitsandbytes/optim/optimizer.py (Optimizer2State),
//   pytorch/ao torchao/optim/adam.py @ 0372e5ff, subclass_8bit.py @ 01962500, subclass_4bit.py
//   and subclass_fp8.py @ 029bb60a, quant_utils.py @ 173b31ec (torchao low-bit AdamW).
#include "trainmem/optimizer.hpp"

#include "trainmem/vocabulary.hpp"
#include "util/checked.hpp"  // checked_mul

namespace trainmem {

uint64_t StateTensor::numel() const {
  if (kind != StateKind::tensor && kind != StateKind::shared_tensor) return 0;
  uint64_t n = 1;
  for (uint64_t d : shape) n = checked_mul(n, d, "optimizer state");
  return n;
}

uint64_t StateTensor::bytes() const { return dtype_bytes_for(dtype, numel()); }

const std::vector<std::string>& optimizer_names() {
  static const std::vector<std::string> names = vocab::names(vocab::kOptimizers);
  return names;
}

std::string optimizer_name(const OptimizerSpec& o) {
  return vocab::name_for(vocab::kOptimizers, o.type);
}

uint64_t default_block_size(vocab::Optimizer type) {
  // adam.py @ 0372e5ff: AdamW8bit and AdamWFp8 block_size=256, AdamW4bit block_size=128;
  // bitsandbytes Optimizer2State: blocks of 2048 values
  switch (type) {
    case vocab::Optimizer::torchao_adamw_8bit:
    case vocab::Optimizer::torchao_adamw_fp8:
      return 256;
    case vocab::Optimizer::torchao_adamw_4bit:
      return 128;
    default:
      return 2048;
  }
}

bool is_torchao_low_bit(const OptimizerSpec& o) {
  return o.type == vocab::Optimizer::torchao_adamw_8bit ||
         o.type == vocab::Optimizer::torchao_adamw_4bit ||
         o.type == vocab::Optimizer::torchao_adamw_fp8;
}

bool has_byte_states(const OptimizerSpec& o) {
  return o.type == vocab::Optimizer::adam_8bit || is_torchao_low_bit(o);
}

namespace {

using vocab::Optimizer;

StateTensor tensor(const char* name, std::vector<uint64_t> shape, DType dtype, bool follows) {
  StateTensor s;
  s.name = name;
  s.kind = StateKind::tensor;
  s.shape = std::move(shape);
  s.dtype = dtype;
  s.follows_param = follows;
  return s;
}

StateTensor scalar_kind(const char* name, StateKind kind) {
  StateTensor s;
  s.name = name;
  s.kind = kind;
  return s;
}

// torchao _AdamBase._new_buffer (adam.py @ 0372e5ff): a quantised state only for tensors of
// >= 4096 values whose count divides by block_size ("follow bitsandbytes"); otherwise
// torch.zeros_like(p), in the parameter's dtype.
void torchao_buffer(const OptimizerSpec& o, const TensorSpec& param, DType state_dtype, int which,
                    std::vector<StateTensor>* s) {
  static const char* const plain[3] = {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
  static const char* const codes[3] = {"exp_avg.codes", "exp_avg_sq.codes", "max_exp_avg_sq.codes"};
  static const char* const scale[3] = {"exp_avg.scale", "exp_avg_sq.scale", "max_exp_avg_sq.scale"};
  static const char* const qmap[3] = {"exp_avg.qmap", "exp_avg_sq.qmap", "max_exp_avg_sq.qmap"};
  const uint64_t numel = param.numel();
  if (numel < 4096 || numel % o.block_size != 0) {
    s->push_back(tensor(plain[which], param.shape, state_dtype, true));
    return;
  }
  const uint64_t blocks = numel / o.block_size;
  if (o.type == Optimizer::torchao_adamw_8bit) {
    // OptimState8bit.zeros: uint8 codes of the parameter's shape, fp32 scale per block, and a
    // 256-entry fp32 qmap (create_dynamic_map: 2**8 values) made for every state tensor
    s->push_back(tensor(codes[which], param.shape, DType::uint8, false));
    s->push_back(tensor(scale[which], {blocks}, DType::fp32, false));
    s->push_back(tensor(qmap[which], {256}, DType::fp32, false));
  } else if (o.type == Optimizer::torchao_adamw_4bit) {
    // OptimState4bit.zeros: two 4-bit codes per uint8 (numel / 2, flat), fp32 scale per block,
    // a 16-entry fp32 qmap (signed: create_dynamic_map(True, 3, 4); unsigned: linspace 1/16..1)
    s->push_back(tensor(codes[which], {numel / 2}, DType::uint8, false));
    s->push_back(tensor(scale[which], {blocks}, DType::fp32, false));
    s->push_back(tensor(qmap[which], {16}, DType::fp32, false));
  } else {
    // OptimStateFp8.zeros: float8_e4m3fn codes of the parameter's shape, fp32 scale per block
    s->push_back(tensor(codes[which], param.shape, DType::fp8, false));
    s->push_back(tensor(scale[which], {blocks}, DType::fp32, false));
  }
}

// torch 1.13 sgd.py: state['momentum_buffer'] is written for every parameter, None when
// momentum == 0 (measured); torch >= 2.0 writes it only when momentum != 0.
void sgd_state(const OptimizerSpec& opt, const TensorSpec& param, DType state_dtype,
               std::vector<StateTensor>* s) {
  if (opt.momentum != 0)
    s->push_back(tensor("momentum_buffer", param.shape, state_dtype, true));
  else
    s->push_back(scalar_kind("momentum_buffer", StateKind::python_none));
}

// rmsprop.py (1.13): step is a Python int; square_avg; momentum_buffer if momentum > 0;
// grad_avg if centered.
void rmsprop_state(const OptimizerSpec& opt, const TensorSpec& param, DType state_dtype,
                   std::vector<StateTensor>* s) {
  s->push_back(scalar_kind("step", StateKind::python_int));
  s->push_back(tensor("square_avg", param.shape, state_dtype, true));
  if (opt.momentum > 0) s->push_back(tensor("momentum_buffer", param.shape, state_dtype, true));
  if (opt.centered) s->push_back(tensor("grad_avg", param.shape, state_dtype, true));
}

// transformers Adafactor: step int; exp_avg if beta1; for >= 2-D tensors factored
// exp_avg_sq_row = shape[:-1], exp_avg_sq_col = shape[:-2] + shape[-1:]; else a full
// exp_avg_sq; RMS becomes a 0-dim tensor after the first step. States are created from the
// fp32 gradient (16-bit grads are upcast), so they are float32.
void hf_adafactor_state(const OptimizerSpec& opt, const TensorSpec& param,
                        std::vector<StateTensor>* s) {
  const std::vector<uint64_t>& shape = param.shape;
  s->push_back(scalar_kind("step", StateKind::python_int));
  if (opt.has_beta1) s->push_back(tensor("exp_avg", shape, DType::fp32, false));
  if (shape.size() >= 2) {
    std::vector<uint64_t> row(shape.begin(), shape.end() - 1);
    std::vector<uint64_t> col(shape.begin(), shape.end() - 2);
    col.push_back(shape.back());
    s->push_back(tensor("exp_avg_sq_row", row, DType::fp32, false));
    s->push_back(tensor("exp_avg_sq_col", col, DType::fp32, false));
  } else {
    s->push_back(tensor("exp_avg_sq", shape, DType::fp32, false));
  }
  s->push_back(tensor("RMS", {}, DType::fp32, false));
}

// torch/optim/_adafactor.py (torch >= 2.5): step 0-dim float32; >= 2-D: row_var with the
// last dim 1, col_var with dim -2 set to 1; else variance zeros_like(grad).
void torch_adafactor_state(const TensorSpec& param, DType state_dtype,
                           std::vector<StateTensor>* s) {
  const std::vector<uint64_t>& shape = param.shape;
  s->push_back(tensor("step", {}, DType::fp32, false));
  if (shape.size() >= 2) {
    std::vector<uint64_t> row = shape, col = shape;
    row.back() = 1;
    col[col.size() - 2] = 1;
    s->push_back(tensor("row_var", row, state_dtype, true));
    s->push_back(tensor("col_var", col, state_dtype, true));
  } else {
    s->push_back(tensor("variance", shape, state_dtype, true));
  }
}

// bitsandbytes Optimizer2State.init_state: step int; tensors with < min_8bit_size (and
// < 4096) values keep fp32 state1/state2; others uint8 state1/state2, the shared 256-entry
// fp32 maps qmap1/qmap2 and per-block fp32 absmax1/absmax2 (blocks of 2048 values).
void bnb_8bit_state(const OptimizerSpec& opt, const TensorSpec& param,
                    std::vector<StateTensor>* s) {
  const std::vector<uint64_t>& shape = param.shape;
  s->push_back(scalar_kind("step", StateKind::python_int));
  const uint64_t numel = param.numel();
  if (numel < opt.min_8bit_size || numel < 4096) {
    s->push_back(tensor("state1", shape, DType::fp32, false));
    s->push_back(tensor("state2", shape, DType::fp32, false));
    return;
  }
  const uint64_t blocks = numel / opt.block_size + (numel % opt.block_size ? 1 : 0);
  s->push_back(tensor("state1", shape, DType::uint8, false));
  StateTensor q1 = tensor("qmap1", {256}, DType::fp32, false);
  q1.kind = StateKind::shared_tensor;
  s->push_back(q1);
  s->push_back(tensor("state2", shape, DType::uint8, false));
  StateTensor q2 = tensor("qmap2", {256}, DType::fp32, false);
  q2.kind = StateKind::shared_tensor;
  s->push_back(q2);
  s->push_back(tensor("absmax1", {blocks}, DType::fp32, false));
  s->push_back(tensor("absmax2", {blocks}, DType::fp32, false));
}

}  // namespace

std::vector<StateTensor> optimizer_state(const OptimizerSpec& opt, const TensorSpec& param,
                                         DType state_dtype) {
  std::vector<StateTensor> s;
  const std::vector<uint64_t>& shape = param.shape;
  if (!param.trainable) return s;
  switch (opt.type) {
    case Optimizer::sgd:
      sgd_state(opt, param, state_dtype, &s);
      break;
    case Optimizer::adam:
    case Optimizer::adamw:
      // adam.py: step is a 0-dim float32 tensor (torch >= 1.12); moments zeros_like(param).
      s.push_back(tensor("step", {}, DType::fp32, false));
      s.push_back(tensor("exp_avg", shape, state_dtype, true));
      s.push_back(tensor("exp_avg_sq", shape, state_dtype, true));
      if (opt.amsgrad) s.push_back(tensor("max_exp_avg_sq", shape, state_dtype, true));
      break;
    case Optimizer::torchao_adamw_8bit:
    case Optimizer::torchao_adamw_4bit:
    case Optimizer::torchao_adamw_fp8:
      // torchao _AdamBase.step (adam.py @ 0372e5ff): step = torch.tensor(0.0) (a 0-dim fp32 CPU
      // tensor), exp_avg (signed map), exp_avg_sq (unsigned), max_exp_avg_sq with amsgrad
      s.push_back(tensor("step", {}, DType::fp32, false));
      torchao_buffer(opt, param, state_dtype, 0, &s);
      torchao_buffer(opt, param, state_dtype, 1, &s);
      if (opt.amsgrad) torchao_buffer(opt, param, state_dtype, 2, &s);
      break;
    case Optimizer::adagrad:
      // adagrad.py: step (0-dim float32 tensor) and sum, created in the constructor.
      s.push_back(tensor("step", {}, DType::fp32, false));
      s.push_back(tensor("sum", shape, state_dtype, true));
      break;
    case Optimizer::rmsprop:
      rmsprop_state(opt, param, state_dtype, &s);
      break;
    case Optimizer::adafactor:
      hf_adafactor_state(opt, param, &s);
      break;
    case Optimizer::torch_adafactor:
      torch_adafactor_state(param, state_dtype, &s);
      break;
    case Optimizer::lion:
      // lion-pytorch: exp_avg only (Chen et al. 2023 keep one moment).
      s.push_back(tensor("exp_avg", shape, state_dtype, true));
      break;
    case Optimizer::adam_8bit:
      bnb_8bit_state(opt, param, &s);
      break;
  }
  return s;
}

uint64_t optimizer_state_bytes(const OptimizerSpec& opt, const TensorSpec& param,
                               DType state_dtype) {
  uint64_t total = 0;
  for (const auto& st : optimizer_state(opt, param, state_dtype))
    if (st.kind == StateKind::tensor) total = checked_add(total, st.bytes(), "optimizer state");
  return total;
}

uint64_t optimizer_shared_state_bytes(const OptimizerSpec& opt, bool any_8bit) {
  // bitsandbytes: name2qmap["dynamic"] and ["udynamic"], 256 float32 values each.
  return opt.type == Optimizer::adam_8bit && any_8bit ? 2 * 256 * 4 : 0;
}

std::vector<GroupEntry> optimizer_param_group(const OptimizerSpec& opt) {
  // torch 1.13 defaults (measured: tests/fixtures/torch_checkpoints.json "layout").
  const char wd = opt.weight_decay_set ? 'f' : 'i';
  switch (opt.type) {
    case Optimizer::sgd:
      return {{"lr", 'f'},        {"momentum", opt.momentum != 0 ? 'f' : 'i'},
              {"dampening", 'i'}, {"weight_decay", wd},
              {"nesterov", 'b'},  {"maximize", 'b'},
              {"foreach", 'n'},   {"differentiable", 'b'}};
    case Optimizer::adam:
      return {{"lr", 'f'},          {"betas", 't'},      {"eps", 'f'},
              {"weight_decay", wd}, {"amsgrad", 'b'},    {"maximize", 'b'},
              {"foreach", 'n'},     {"capturable", 'b'}, {"differentiable", 'b'},
              {"fused", 'b'}};
    case Optimizer::adamw:
      return {{"lr", 'f'},      {"betas", 't'},   {"eps", 'f'},      {"weight_decay", 'f'},
              {"amsgrad", 'b'}, {"foreach", 'n'}, {"maximize", 'b'}, {"capturable", 'b'}};
    case Optimizer::adagrad:
      return {{"lr", 'f'},
              {"lr_decay", 'i'},
              {"eps", 'f'},
              {"weight_decay", wd},
              {"initial_accumulator_value", 'i'},
              {"foreach", 'n'},
              {"maximize", 'b'}};
    case Optimizer::rmsprop:
      return {{"lr", 'f'},
              {"momentum", opt.momentum != 0 ? 'f' : 'i'},
              {"alpha", 'f'},
              {"eps", 'f'},
              {"centered", 'b'},
              {"weight_decay", wd},
              {"foreach", 'n'},
              {"maximize", 'b'},
              {"differentiable", 'b'}};
    case Optimizer::adafactor:  // transformers Adafactor defaults (lr None, eps tuple, ...)
      return {{"lr", 'n'},
              {"eps", 't'},
              {"clip_threshold", 'f'},
              {"decay_rate", 'f'},
              {"beta1", opt.has_beta1 ? 'f' : 'n'},
              {"weight_decay", 'f'},
              {"scale_parameter", 'b'},
              {"relative_step", 'b'},
              {"warmup_init", 'b'}};
    case Optimizer::torch_adafactor:  // torch 2.5 Adafactor defaults (not measurable on 1.13)
      return {{"lr", 'f'},           {"beta2_decay", 'f'}, {"eps", 'u'},     {"d", 'f'},
              {"weight_decay", 'f'}, {"foreach", 'n'},     {"maximize", 'b'}};
    case Optimizer::lion:
      return {{"lr", 'f'}, {"betas", 't'}, {"weight_decay", 'f'}};
    case Optimizer::adam_8bit:
      return {{"lr", 'f'}, {"betas", 't'}, {"eps", 'f'}, {"weight_decay", wd}};
    case Optimizer::torchao_adamw_8bit:
    case Optimizer::torchao_adamw_4bit:
    case Optimizer::torchao_adamw_fp8:
      // torchao _AdamBase: defaults lr, betas, eps, weight_decay, amsgrad (lr becomes a tensor
      // in add_param_group; the container model pickles it as a float: see the checkpoint note)
      return {{"lr", 'f'}, {"betas", 't'}, {"eps", 'f'}, {"weight_decay", 'f'}, {"amsgrad", 'b'}};
  }
  return {};
}

uint32_t simple_state_copies(const OptimizerSpec& opt) {
  // Seed 003: SGD keeps no state (momentum: one buffer), Adam two moments (+ amsgrad max).
  switch (opt.type) {
    case Optimizer::sgd:
      return opt.momentum != 0 ? 1 : 0;
    case Optimizer::adam:
    case Optimizer::adamw:
      return opt.amsgrad ? 3 : 2;
    case Optimizer::rmsprop:
      return 1 + (opt.momentum > 0 ? 1 : 0) + (opt.centered ? 1 : 0);
    case Optimizer::adagrad:
    case Optimizer::lion:
      return 1;
    case Optimizer::adam_8bit:
    case Optimizer::torchao_adamw_8bit:
    case Optimizer::torchao_adamw_fp8:
      return 2;
    case Optimizer::torchao_adamw_4bit:
      return 1;  // two 4-bit moments: one byte per parameter
    case Optimizer::adafactor:
    case Optimizer::torch_adafactor:
      return 0;  // sublinear, no per-parameter copy in the simple formula
  }
  return 0;
}

}  // namespace trainmem

namespace trainmem {

bool has_implementation(const OptimizerSpec& o, vocab::OptimizerImpl impl) {
  using vocab::Optimizer;
  using vocab::OptimizerImpl;
  const Optimizer t = o.type;
  if (t == Optimizer::adam_8bit || is_torchao_low_bit(o)) return false;  // their own kernels
  switch (impl) {
    case OptimizerImpl::for_loop:
      return true;
    case OptimizerImpl::foreach:
      // torch.optim's _multi_tensor_* paths; transformers' Adafactor and lion-pytorch have none
      return t != Optimizer::adafactor && t != Optimizer::lion;
    case OptimizerImpl::fused:
      // fused=True: Adam / AdamW (torch >= 2.0), SGD (torch >= 2.4) on CUDA
      return t == Optimizer::adam || t == Optimizer::adamw || t == Optimizer::sgd;
    case OptimizerImpl::transformers:
      return t == Optimizer::adamw;  // transformers.AdamW (optimization.py), removed in v4.48
  }
  return false;
}

StepFacts step_facts(const OptimizerSpec& o, vocab::OptimizerImpl requested,
                     uint32_t adam_foreach_lists) {
  using vocab::Optimizer;
  using vocab::OptimizerImpl;
  StepFacts f;
  const Optimizer t = o.type;
  if (t == Optimizer::adam_8bit || is_torchao_low_bit(o)) {
    // bitsandbytes' fused 8-bit kernels; torchao's torch.compile'd per-tensor step (its fp32
    // values taken as fused into the kernels: an assumption stated with the result)
    f.impl = OptimizerImpl::fused;
    f.own_kernel = true;
    return f;
  }
  f.impl = has_implementation(o, requested) ? requested : OptimizerImpl::for_loop;
  if (f.impl == OptimizerImpl::fused) return f;  // one kernel per list: no temporaries
  if (t == Optimizer::adam || t == Optimizer::adamw) {
    // _single_tensor_adamw: denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps): the
    // sqrt and its quotient at once; transformers.AdamW: denom = exp_avg_sq.sqrt().add_(eps);
    // _multi_tensor_adamw: _foreach_sqrt, and in torch <= 2.0 denom = _foreach_add(...) too
    f.loop_copies = f.impl == OptimizerImpl::transformers ? 1 : 2;
    f.foreach_lists = adam_foreach_lists;
  } else if (t == Optimizer::adagrad || t == Optimizer::rmsprop) {
    f.loop_copies = f.foreach_lists = 1;  // std = state_sum.sqrt().add_(eps); avg = sqrt
  } else if (t == Optimizer::torch_adafactor) {
    f.loop_copies = 2;  // torch.optim.Adafactor: the row/col variance estimate and the update
    f.foreach_lists = 2;
  } else if (t == Optimizer::lion || t == Optimizer::adafactor) {
    // lion-pytorch: update = exp_avg.clone().mul_(beta1).add(grad, ...): two at once;
    // transformers' Adafactor: update = grad**2 + eps, then the approximated update
    f.loop_copies = 2;
  }
  return f;  // sgd: in place (momentum_buffer is state)
}

}  // namespace trainmem
