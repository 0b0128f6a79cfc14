// Traced models (model.trace) against real PyTorch. tests/fixtures/traces/ holds traces written on
// the meta device by python/trainmem_trace at one batch size; tests/fixtures/torch_traced.json
// the same models' real CPU training steps at other batch sizes (and lengths), measured with
// torch 1.13 by tools/measure_traced.py. Goals (issue: trace any PyTorch model): saved-for-
// backward bytes within 1 %, the step's peak within 5 %, runtime "pytorch-cpu".
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <sstream>

#include "io/request.hpp"
#include "trainmem/api.hpp"

using trainmem::json;

namespace {

std::string read_text(const std::string& rel) {
  std::ifstream in(std::string(TM_SOURCE_DIR) + "/tests/fixtures/" + rel);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

json call(const char* fn, const json& req) {
  const json env = json::parse(trainmem::call(fn, req.dump()));
  INFO(env.dump().substr(0, 1500));
  REQUIRE(env["ok"] == true);
  return env["result"];
}

json error_of(const char* fn, const json& req) {
  const json env = json::parse(trainmem::call(fn, req.dump()));
  INFO(env.dump().substr(0, 800));
  REQUIRE(env["ok"] == false);
  return env["error"];
}

json trace_of(const std::string& rel) { return json::parse(read_text(rel)); }

// The request a measured case describes (tools/measure_traced.py).
json request_for(const json& c, const json& trace) {
  json r = {{"model", {{"trace", trace}}},
            {"microBatch", c["microBatch"]},
            {"runtime", "pytorch-cpu"},
            {"optimizer", c["optimizer"]},
            {"timeline", false},
            // the measured step calls opt.zero_grad(set_to_none=True) (torch 1.13's default,
            // and the runtime's, is False)
            {"zeroGradSetToNone", true}};
  if (c.contains("seqLen")) r["seqLen"] = c["seqLen"];
  return r;
}

}  // namespace

TEST_CASE("traced: saved bytes within 1 % and step peaks within 5 % of torch 1.13 (CPU)",
          "[traced]") {
  const json fx = json::parse(read_text("torch_traced.json"));
  REQUIRE(fx["cases"].size() >= 14);
  std::set<std::string> models;
  for (const auto& c : fx["cases"]) {
    INFO(c["name"].get<std::string>());
    models.insert(c["trace"].get<std::string>());
    const json trace = trace_of(c["trace"]);
    // every case is measured at a size the trace was not recorded at
    CHECK(c["microBatch"] != trace["sizes"]["batch"]);
    const json res = call("peakMemory", request_for(c, trace));
    const double saved = c["savedBytes"].get<double>(), peak = c["peakBytes"].get<double>();
    const double got_saved = res["trace"]["savedBytes"].get<double>();
    const double got_peak = res["allocatedPeakBytes"].get<double>();
    INFO("saved: measured " << saved << " predicted " << got_saved);
    INFO("peak: measured " << peak << " (" << c["peakPhase"] << ") predicted " << got_peak << " ("
                           << res["peakPhase"] << ")");
    CHECK(std::fabs(got_saved - saved) <= 0.01 * saved);
    // (the U-Net's peak is in a convolution's backward: the CPU kernels' own temporaries,
    // tools/measure_cpu_kernel_temps.py, are what the traced step cannot see)
    CHECK(std::fabs(got_peak - peak) <= 0.05 * peak);
    CHECK(res["params"] == c["params"]);
  }
  CHECK(models.size() >= 11);  // eight torchvision models and three of our own at least
}

namespace {

// The family models of tools/tm_torch_models.py as their configs (tools/measure_activations.py).
json family_config(const std::string& name) {
  if (name == "gpt2_smallish")
    return {{"model_type", "gpt2"}, {"n_embd", 192},      {"n_head", 6},
            {"n_layer", 3},         {"n_positions", 256}, {"vocab_size", 3000},
            {"attn_pdrop", 0.1},    {"resid_pdrop", 0.1}, {"embd_pdrop", 0.1}};
  return {{"model_type", "llama"},    {"hidden_size", 128},
          {"num_attention_heads", 4}, {"num_key_value_heads", 4},
          {"num_hidden_layers", 2},   {"intermediate_size", 344},
          {"vocab_size", 1000},       {"rms_norm_eps", 1e-6},
          {"rope_theta", 10000.0},    {"max_position_embeddings", 512}};
}

}  // namespace

TEST_CASE("traced: models of the built-in families give their configs' answers within 1 %",
          "[traced]") {
  for (const std::string name : {"gpt2_smallish", "llama_tiny"}) {
    const json trace = trace_of("traces/" + name + ".trace.json");
    for (const std::string precision : {"fp32", "bf16"}) {
      INFO(name << " " << precision);
      json r = {{"microBatch", 4},      {"seqLen", 128},          {"runtime", "pytorch-cpu"},
                {"optimizer", "adamw"}, {"precision", precision}, {"timeline", false},
                {"attention", "eager"}};
      r["model"] = {{"config", family_config(name)}};
      const json cfg = call("peakMemory", r);
      r["model"] = {{"trace", trace}};
      const json tr = call("peakMemory", r);
      for (const char* k : {"allocatedPeakBytes", "storedActivationBytes"}) {
        INFO(k << ": config " << cfg[k] << " trace " << tr[k]);
        CHECK(std::fabs(tr[k].get<double>() - cfg[k].get<double>()) <= 0.01 * cfg[k].get<double>());
      }
      CHECK(tr["params"] == cfg["params"]);
    }
  }
  // and against the measurement of the same model (tests/fixtures/torch_activations.json:
  // "llama tiny fp32 b2 s64", 4,055,572 bytes saved)
  json r = {{"model", {{"trace", trace_of("traces/llama_tiny.trace.json")}}},
            {"microBatch", 2},
            {"seqLen", 64},
            {"runtime", "pytorch-cpu"},
            {"timeline", false}};
  CHECK(call("peakMemory", r)["trace"]["savedBytes"] == 4055572);
}

TEST_CASE("traced: every calculator reads a trace, and the training settings apply", "[traced]") {
  const json lm = trace_of("traces/tinylm.trace.json");
  const json base = {{"model", {{"trace", lm}}}, {"microBatch", 4},      {"seqLen", 64},
                     {"runtime", "pytorch-cpu"}, {"optimizer", "adamw"}, {"timeline", false}};
  const json plain = call("peakMemory", base);
  // checkpointing every block keeps less for the backward
  json ck = base;
  ck["checkpointing"] = "full";
  CHECK(call("peakMemory", ck)["storedActivationBytes"] < plain["storedActivationBytes"]);
  // the longer sequence keeps more (b s^2 attention scores): 4x the length, more than 4x
  json longer = base;
  longer["seqLen"] = 256;
  CHECK(call("peakMemory", longer)["trace"]["savedBytes"].get<double>() >
        4.0 * plain["trace"]["savedBytes"].get<double>());
  // seqLen defaults to the traced length
  json traced_len = base;
  traced_len.erase("seqLen");
  CHECK(call("peakMemory", traced_len)["trace"]["tracedSeqLen"] == 32);
  // ZeRO-2 over 4 ranks: a quarter of the gradients and optimizer state
  json zero = base;
  zero["zeroStage"] = 2;
  zero["dataParallel"] = 4;
  const json z = call("peakMemory", zero);
  CHECK(z["breakdown"]["optimizerState"]["bytes"].get<double>() ==
        Approx(plain["breakdown"]["optimizerState"]["bytes"].get<double>() / 4).epsilon(1e-6));
  // LoRA on named Linear modules: rank x (in + out) per adapted linear (qkv: 128 -> 384, proj:
  // 128 -> 128, in each of the 3 blocks)
  json lora = base;
  lora["lora"] = {{"rank", 8}, {"targetModules", {"qkv", "proj"}}};
  CHECK(call("peakMemory", lora)["trainableParams"] == 3 * 8 * ((128 + 384) + (128 + 128)));
  json fsdp = base;
  fsdp["runtime"] = "pytorch-2.5-cuda";
  fsdp["dataParallel"] = 4;
  fsdp["fsdp"] = {{"shardingStrategy", "FULL_SHARD"}};
  CHECK(call("peakMemory", fsdp)["peakBytes"] > 0);
  // placement: one chain layer per layer of the trace
  const json pl = call("placement", {{"model", {{"trace", lm}}},
                                     {"microBatch", 4},
                                     {"strategy", "optimal"},
                                     {"budgetBytes", 20000000}});
  CHECK(pl["plan"].size() == lm["layers"].size());
  // the accumulation planner, checkpoint size and describeModel
  const json acc = call("accumulation", {{"model", {{"trace", lm}}},
                                         {"gpu", "a100-80gb"},
                                         {"targetGlobalBatch", 64},
                                         {"runtime", "pytorch-2.5-cuda"}});
  CHECK(acc["recommended"].is_object());
  const json size = call("checkpointSize", {{"model", {{"trace", lm}}},
                                            {"optimizer", "adamw"},
                                            {"weightDtype", "fp32"},
                                            {"format", "raw"}});
  CHECK(size["breakdown"]["weights"] == 4 * plain["params"].get<uint64_t>());
  const json d = call("describeModel", {{"model", {{"trace", lm}}}});
  CHECK(d["source"] == "trace");
  CHECK(d["trace"]["layers"].size() == lm["layers"].size());
}

TEST_CASE("traced: what a trace cannot answer is an error naming the field", "[traced]") {
  const json lm = trace_of("traces/tinylm.trace.json");
  const json mlp = json::parse(read_text("../fuzz/trace_seeds/mlp.trace.json"));
  const json base = {{"model", {{"trace", lm}}}, {"microBatch", 2}, {"timeline", false}};
  const std::vector<std::tuple<const char*, json, const char*, const char*>> cases = {
      {"amp", {{"precision", "amp-bf16"}}, "unsupported", "precision"},
      {"tp", {{"tensorParallel", 2}}, "unsupported", "tensorParallel"},
      {"compile", {{"compile", true}}, "unsupported", "compile"},
      {"attn", {{"checkpointing", "attention-recompute"}}, "unsupported", "checkpointing"},
      {"loss", {{"loss", "chunked"}}, "unsupported", "loss"},
  };
  for (const auto& [what, extra, code, field] : cases) {
    INFO(what);
    json r = base;
    r.update(extra);
    const json e = error_of("peakMemory", r);
    CHECK(e["code"] == code);
    CHECK(e["field"] == field);
  }
  // a trace without a sequence length refuses seqLen
  const json e =
      error_of("peakMemory", {{"model", {{"trace", mlp}}}, {"microBatch", 2}, {"seqLen", 8}});
  CHECK(e["field"] == "seqLen");
  CHECK(e["code"] == "inconsistent");
}

TEST_CASE("traced: a malformed or hostile trace is an error naming its field", "[traced]") {
  const json good = json::parse(read_text("../fuzz/trace_seeds/mlp.trace.json"));
  const auto request = [](const json& trace) {
    return json{{"model", {{"trace", trace}}}, {"microBatch", 2}, {"timeline", false}};
  };
  using Edit = void (*)(json&);
  const std::vector<std::tuple<const char*, Edit, const char*, const char*>> cases = {
      {"format", [](json& t) { t["format"] = "other"; }, "unknown_value", "model.trace.format"},
      {"version", [](json& t) { t["version"] = 2; }, "unsupported", "model.trace.version"},
      {"unknown key", [](json& t) { t["extra"] = 1; }, "unknown_key", "model.trace.extra"},
      {"free before made", [](json& t) { t["tensors"][1]["free"] = t["tensors"][1]["op"]; },
       "inconsistent", "model.trace.tensors[1].free"},
      {"op out of range", [](json& t) { t["tensors"][0]["op"] = 100000; }, "out_of_range",
       "model.trace.tensors[0].op"},
      {"unknown term",
       [](json& t) {
         t["tensors"][0]["bytes"] = {{"q", 4}};
       },
       "unknown_key", "model.trace.tensors[0].bytes.q"},
      {"s without a length",
       [](json& t) {
         t["tensors"][0]["bytes"] = {{"bs", 4}};
       },
       "inconsistent", "model.trace.tensors[0].bytes.bs"},
      {"huge coefficient",
       [](json& t) {
         t["tensors"][0]["bytes"] = {{"b", 1e300}};
       },
       "out_of_range", "model.trace.tensors[0].bytes.b"},
      {"negative size", [](json& t) { t["tensors"][0]["bytes"] = -8; }, "out_of_range",
       "model.trace.tensors[0].bytes"},
      {"layers leave a gap", [](json& t) { t["layers"][1]["start"] = 0; }, "inconsistent",
       "model.trace.layers[1].start"},
      {"layers miss ops", [](json& t) { t["layers"].erase(t["layers"].size() - 1); },
       "inconsistent", "model.trace.layers"},
      {"freed twice", [](json& t) { t["backward"].push_back(t["backward"].back()); },
       "inconsistent", ""},
      {"event kind", [](json& t) { t["backward"][0][0] = "x"; }, "unknown_value",
       "model.trace.backward[0][0]"},
      {"tied to nothing", [](json& t) { t["parameters"][0]["tiedTo"] = "nope"; }, "inconsistent",
       "model.trace.parameters[0].tiedTo"},
      {"module out of range", [](json& t) { t["ops"][0]["module"] = 999; }, "out_of_range",
       "model.trace.ops[0].module"},
      {"dtype", [](json& t) { t["tensors"][0]["dtype"] = "float31"; }, "unknown_value",
       "model.trace.tensors[0].dtype"},
  };
  for (const auto& [what, edit, code, field] : cases) {
    INFO(what);
    json t = good;
    edit(t);
    const json e = error_of("peakMemory", request(t));
    CHECK(e["code"] == code);
    if (std::string(field).empty())
      CHECK(e["field"].get<std::string>().rfind("model.trace.backward[", 0) == 0);
    else
      CHECK(e["field"] == field);
  }
  // the file's text: parsed as strictly as a request, errors inside it named
  const json bad_text = error_of("peakMemory", request(json(std::string("{\"format\": 1e400}"))));
  CHECK(bad_text["code"] == "out_of_range");
  CHECK(bad_text["field"] == "model.trace.format");
  CHECK(error_of("describeModel", {{"model", {{"trace", "[1, 2"}}}})["code"] == "invalid_json");
  // and the core answers the next request
  CHECK(call("peakMemory", request(json(good.dump())))["trace"]["savedBytes"] > 0);
}

TEST_CASE("traced: the model's output the step's code holds lives from the loss to the step's end",
          "[traced]") {
  // tools/tm_custom_models.py TinyLM: its logits (b x s x vocab 2000, fp32) are the model's
  // output, which the loss does not save (log_softmax keeps its own result) and the measured
  // loop holds in `out` until its step returns. The same trace with the logits freed right
  // after the op that makes them must need exactly their bytes less from the loss on,
  // checkpointed or not.
  const json lm = trace_of("traces/tinylm.trace.json");
  const uint64_t logits = 4 * 64 * 2000 * 4;
  size_t out = 0;
  for (; out < lm["tensors"].size(); ++out)
    if (lm["tensors"][out].value("op", -1) == 194) break;
  REQUIRE(lm["tensors"][out]["bytes"] == json({{"bs", 8000}}));
  json freed = lm;
  freed["tensors"][out]["free"] = 195;
  for (const json& ckpt : {json("none"), json("full")}) {
    INFO(ckpt.dump());
    json r = {{"microBatch", 4},      {"seqLen", 64},          {"runtime", "pytorch-cpu"},
              {"optimizer", "adamw"}, {"checkpointing", ckpt}, {"zeroGradSetToNone", true}};
    r["model"] = {{"trace", lm}};
    const json held = call("peakMemory", r);
    r["model"] = {{"trace", freed}};
    const json gone = call("peakMemory", r);
    CHECK(held["allocatedPeakBytes"].get<uint64_t>() - gone["allocatedPeakBytes"].get<uint64_t>() ==
          logits);
    REQUIRE(held["timeline"].size() == gone["timeline"].size());
    bool after_forward = false;
    for (size_t k = 0; k < held["timeline"].size(); ++k) {
      const json& p = held["timeline"][k];
      after_forward = after_forward || p["phase"] == "loss";
      if (!after_forward) continue;
      INFO(p["phase"] << " " << p["layer"]);
      CHECK(p["totalBytes"].get<uint64_t>() - gone["timeline"][k]["totalBytes"].get<uint64_t>() ==
            logits);
    }
    CHECK(after_forward);
  }
}

TEST_CASE("traced: the head's parameters stay with the head when the blocks hold none",
          "[traced]") {
  // The U-Net with every block parameter moved to the stem: the head (a 1x1 convolution
  // 16 -> 5 with bias) still makes its gradients in the first backward layer: (5 x 16 + 5) x 4 B.
  json unet = trace_of("traces/unetish.trace.json");
  const int64_t nl = static_cast<int64_t>(unet["layers"].size());
  for (json& p : unet["parameters"])
    if (p["layer"].get<int64_t>() > 0 && p["layer"].get<int64_t>() < nl - 1) p["layer"] = 0;
  const json r = call("peakMemory", {{"model", {{"trace", unet}}},
                                     {"microBatch", 2},
                                     {"runtime", "pytorch-cpu"},
                                     {"optimizer", "sgd"},
                                     {"zeroGradSetToNone", true}});
  bool seen = false;
  for (const json& p : r["timeline"])
    if (p["phase"] == "backward" && p["layer"] == nl - 1) {
      seen = true;
      CHECK(p["gradientBytes"] == (5 * 16 + 5) * 4);
    }
  CHECK(seen);
}

TEST_CASE("traced: placement plans a traced model with every strategy, optimal under a budget",
          "[traced]") {
  // tests/fuzz/trace_seeds/mlp.trace.json: Linear(4, 8) -> ReLU -> Linear(8, 3) with
  // cross-entropy; chain: the first Linear | ReLU | the second Linear and the loss. At b = 4, fp32:
  // the batch x (4·4·4 = 64 B) and target (4·8 = 32 B), kept by the first addmm and by nll_loss;
  // the first Linear's output, 4·8·4 = 128 B, which no op keeps (ReLU keeps its result: the
  // trace frees it in the forward); ReLU's output, 128 B, kept by ReLU and the second addmm;
  // log_softmax's output 4·3·4 = 48 B, nll_loss's total_weight 4 B and the loss 4 B.
  const json mlp = trace_of("../fuzz/trace_seeds/mlp.trace.json");
  json r = {{"model", {{"trace", mlp}}},
            {"microBatch", 4},
            {"strategy", "optimal"},
            {"budgetBytes", 2000000}};
  const json pl = call("placement", r);
  CHECK(pl["plan"] == json::array({"store", "store", "store"}));
  CHECK(pl["fits"] == true);
  // kept for the backward: 64 + 32 + 128 + 48 + 4 + 4 (not the first Linear's output)
  CHECK(pl["storedBytes"] == 64 + 32 + 128 + 48 + 4 + 4);
  // the most at once: ReLU's backward, with the batch, ReLU's output, the gradient it receives
  // and the one it sends (all 128 B)
  CHECK(pl["peakActivationBytes"] == 64 + 32 + 3 * 128);
  CHECK(pl["peakLayer"] == 1);
  // below that no plan fits: every plan runs ReLU's backward
  r["budgetBytes"] = 64 + 32 + 3 * 128 - 1;
  CHECK(error_of("placement", r)["code"] == "infeasible");
  // a layer whose output another layer made (here ReLU's hands on the first Linear's output)
  // or the step's code holds (the model returns it) still plans: the chain layer counts it
  json odd = mlp;
  odd["layers"][1]["output"] = 0;
  r["model"]["trace"] = odd;
  r["budgetBytes"] = 2000000;
  CHECK(call("placement", r)["plan"].size() == 3);
  odd = mlp;
  odd["tensors"][0].erase("free");
  r["model"]["trace"] = odd;
  CHECK(call("placement", r)["plan"].size() == 3);
  // every strategy plans it and a U-Net whose down outputs skip to the decoder (revolve is
  // defined for chains of equal layers only, and says so)
  const json params = {{"manual", {{"checkpointed", {{0, 1}}}}},
                       {"every-k", {{"k", 2}}},
                       {"block", {{"k", 1}}},
                       {"sequential", {{"segments", 2}}},
                       {"revolve", {{"snapshots", 1}}}};
  for (const json& t : {mlp, trace_of("traces/unetish.trace.json")}) {
    for (const char* s : {"none", "manual", "every-k", "block", "sequential", "sqrt", "chen-greedy",
                          "revolve", "optimal-single-level", "optimal"}) {
      INFO(t["name"] << " " << s);
      json q = {{"model", {{"trace", t}}},
                {"microBatch", 4},
                {"strategy", s},
                {"budgetBytes", 2000000000}};
      if (params.contains(s)) q.update(params[s]);
      if (std::string(s) == "revolve") {
        CHECK(error_of("placement", q)["field"] == "chain.layers[1]");
        continue;
      }
      CHECK(call("placement", q)["plan"].size() == t["layers"].size());
    }
  }
}
