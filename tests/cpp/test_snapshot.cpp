// The snapshot reader and its summary. Hand-built pickles (opcodes from CPython's
// Lib/pickle.py, written by the small writer below) with expected values computed by hand
// from the schema; fixtures written by tools/snapshot_fixtures.py from real PyTorch CPU
// training loops, checked against the figures torch gave (their *.expected.json).
#include <catch2/catch.hpp>
#include <fstream>
#include <iterator>
#include <string>

#include "io/request.hpp"
#include "trainmem/api.hpp"

using namespace trainmem;

namespace {

// ---- a tiny pickle writer (protocol 4 opcodes, no memo)
std::string S(const std::string& s) { return std::string("\x8c") + char(s.size()) + s; }
std::string I(int64_t v) {
  if (v >= -2147483648LL && v <= 2147483647LL) {
    std::string o = "J";
    for (int i = 0; i < 4; ++i) o += char((static_cast<uint64_t>(v) >> (8 * i)) & 0xff);
    return o;
  }
  std::string o = "\x8a\x08";
  for (int i = 0; i < 8; ++i) o += char((static_cast<uint64_t>(v) >> (8 * i)) & 0xff);
  return o;
}
std::string D(const std::string& items) { return "}(" + items + "u"; }
std::string L(const std::string& items) { return "](" + items + "e"; }
std::string P(const std::string& body) { return std::string("\x80\x04", 2) + body + "."; }
std::string E(const char* action, int64_t addr, int64_t size, const std::string& frames = "") {
  return D(S("action") + S(action) + S("addr") + I(addr) + S("size") + I(size) + S("stream") +
           I(0) + (frames.empty() ? "" : S("frames") + frames));
}
std::string frame(const char* file, int line, const char* name) {
  return D(S("filename") + S(file) + S("line") + I(line) + S("name") + S(name));
}
std::string snap(const std::string& events, const std::string& segments = "]") {
  return P(D(S("segments") + segments + S("device_traces") + L(L(events))));
}

json read(const std::string& bytes, const std::string& request = "{}") {
  return json::parse(call_with_bytes("readSnapshot", request, bytes));
}

std::string file(const std::string& name) {
  std::ifstream in(std::string(TM_SOURCE_DIR) + "/tests/fixtures/snapshots/" + name,
                   std::ios::binary);
  REQUIRE(in);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace

TEST_CASE("snapshot: allocations, frees and segments by hand") {
  // segment_alloc 2 MiB; alloc 1000 B (rounds to 1024: CUDACachingAllocator round_size, 512 B
  // multiples); alloc 5000 B (5120); free the 5000: peak allocated = 1024 + 5120 = 6144 at
  // entry 2, requested 6000; reserved 2,097,152 throughout.
  const std::string s =
      snap(E("segment_alloc", 1 << 20, 2 << 20) + E("alloc", 1 << 20, 1000) +
           E("alloc", (1 << 20) + 1024, 5000) + E("free_requested", (1 << 20) + 1024, 5000) +
           E("free_completed", (1 << 20) + 1024, 5000));
  const json r = read(s);
  REQUIRE(r["ok"] == true);
  const json& x = r["result"];
  CHECK(x["format"]["protocol"] == 4);
  CHECK(x["events"]["total"] == 5);
  CHECK(x["events"]["alloc"] == 2);
  CHECK(x["peak"]["allocatedBytes"] == 6144);
  CHECK(x["peak"]["requestedBytes"] == 6000);
  CHECK(x["peak"]["event"] == 2);
  CHECK(x["peak"]["reservedBytes"] == 2097152);
  CHECK(x["reservedPeak"]["bytes"] == 2097152);
  CHECK(x["series"]["x"] == "event");  // no time_us
  // Replayed through the simulator: both requests are small (<= 1 MiB), so one small-pool
  // segment of kSmallBuffer = 2 MiB holds them (CUDACachingAllocator.cpp get_allocation_size).
  CHECK(x["simulatorReplay"]["simulatedReservedBytes"] == 2097152);
  CHECK(x["simulatorReplay"]["simulatedAllocatedBytes"] == 6144);
  CHECK(x["simulatorReplay"]["simulatedSegments"] == 1);
}

TEST_CASE("snapshot: blocks live before recording began are the baseline") {
  // A final segment holds an active 4096 B block that the trace never allocated, and the trace
  // frees a 2048 B block it never allocated: baseline = 4096 + 2048 = 6144; then alloc 512:
  // peak 6656 at entry 0, allocated 4608 after the free.
  const std::string seg = L(D(
      S("device") + I(0) + S("address") + I(1 << 24) + S("total_size") + I(2 << 20) + S("blocks") +
      L(D(S("address") + I(1 << 24) + S("size") + I(4096) + S("requested_size") + I(4096) +
          S("state") + S("active_allocated")) +
        D(S("size") + I((2 << 20) - 4096) + S("state") + S("inactive")))));
  const json r = read(snap(E("alloc", 1 << 26, 512) + E("free_requested", 1 << 27, 2048), seg));
  REQUIRE(r["ok"] == true);
  CHECK(r["result"]["baseline"]["allocatedBytes"] == 6144);
  CHECK(r["result"]["peak"]["allocatedBytes"] == 6656);
  CHECK(r["result"]["segments"]["reservedBytes"] == 2097152);
  CHECK(r["result"]["series"]["points"].back()["allocatedBytes"] == 4608);
}

TEST_CASE("snapshot: LONG1 addresses above 2^63 and negative ints") {
  // 2^63 + 4096 as 9 bytes (a 0x00 sign byte), as pickle writes an unsigned above int64.
  std::string addr = "\x8a\x09";
  for (int i = 0; i < 8; ++i) addr += char(((0x8000000000001000ULL) >> (8 * i)) & 0xff);
  addr += '\0';
  const std::string e =
      D(S("action") + S("alloc") + S("addr") + addr + S("size") + I(1 << 20) + S("stream") + I(-7));
  const json r = read(snap(e));
  REQUIRE(r["ok"] == true);
  CHECK(r["result"]["peak"]["allocatedBytes"] == 1048576);
  // A negative size is out of range.
  const json n = read(snap(E("alloc", 4096, -1)));
  CHECK(n["error"]["code"] == "out_of_range");
  CHECK(n["error"]["field"] == "snapshot.device_traces.size");
}

TEST_CASE("snapshot: every forbidden opcode is refused by name and offset") {
  // Lib/pickle.py: opcodes that import (GLOBAL, STACK_GLOBAL, INST), call (REDUCE, OBJ, NEWOBJ,
  // NEWOBJ_EX, BUILD) or reach outside the data (PERSID, BINPERSID, EXT1/2/4).
  const std::pair<char, const char*> ops[] = {{'c', "GLOBAL"},    {'\x93', "STACK_GLOBAL"},
                                              {'R', "REDUCE"},    {'b', "BUILD"},
                                              {'i', "INST"},      {'o', "OBJ"},
                                              {'\x81', "NEWOBJ"}, {'\x92', "NEWOBJ_EX"},
                                              {'P', "PERSID"},    {'Q', "BINPERSID"},
                                              {'\x82', "EXT1"},   {'\x83', "EXT2"},
                                              {'\x84', "EXT4"}};
  for (const auto& op : ops) {
    const std::string bytes = std::string("\x80\x04N", 3) + op.first + ".";
    const json r = read(bytes);
    INFO(op.second);
    CHECK(r["error"]["code"] == "unsupported");
    CHECK(r["error"]["field"] == "snapshot");
    const std::string m = r["error"]["message"];
    CHECK(m.find(std::string(op.second) + " at byte 3") != std::string::npos);
  }
  // Plain-data opcodes that never appear in a snapshot are refused too (by name).
  for (const char* body : {"I01\n.", "\x8f.", "\x97."}) {
    const json r = read(std::string("\x80\x04", 2) + body);
    CHECK(r["error"]["code"] == "unsupported");
  }
  const json unknown = read(std::string("\x80\x04\xff.", 4));
  CHECK(unknown["error"]["code"] == "invalid_json");
  CHECK(std::string(unknown["error"]["message"]).find("0xff at byte 2") != std::string::npos);
  // The module stays usable: a valid request right after.
  CHECK(read(snap(E("alloc", 4096, 100)))["ok"] == true);
}

TEST_CASE("snapshot: truncated files, huge lengths, deep nesting, bad memo") {
  const std::string real = file("mlp_adam_keep_grads.pickle");
  for (size_t n = 1; n < real.size(); n += 997) {
    const json r = read(real.substr(0, n));
    INFO(n);
    CHECK(r["ok"] == false);
    const std::string c = r["error"]["code"];
    CHECK((c == "invalid_json"));
  }
  auto code_of = [](const std::string& b) { return read(b)["error"]["code"].get<std::string>(); };
  // BINUNICODE of 4 GiB - 1: over the 1 MiB string limit before any byte is read.
  CHECK(code_of(std::string("\x80\x04X\xff\xff\xff\xff", 8)) == "too_large");
  // BINBYTES8 of 2^62 bytes; LONG4 and FRAME longer than the file: truncated.
  CHECK(code_of(std::string("\x80\x04\x8e\0\0\0\0\0\0\0\x40", 11)) == "too_large");
  CHECK(code_of(std::string("\x80\x04\x8b\xff\xff\xff\x7f", 7)) == "invalid_json");
  CHECK(code_of(std::string("\x80\x04\x95\xff\xff\xff\xff\xff\xff\xff\x7f", 11)) == "invalid_json");
  // 65 nested MARKs (limit 64); 1,000,001 values on the stack (limit 1,000,000).
  CHECK(code_of(std::string("\x80\x04", 2) + std::string(65, '(')) == "too_large");
  CHECK(code_of(std::string("\x80\x04", 2) + std::string(1000001, 'N')) == "too_large");
  // A memo entry read before it was written; a memo index beyond the limit.
  CHECK(code_of(std::string("\x80\x04h\x05.", 5)) == "invalid_json");
  CHECK(code_of(std::string("\x80\x04Nr\xff\xff\xff\xff.", 9)) == "too_large");
  // Not a pickle at all, an empty file, an old protocol.
  CHECK(code_of("hello") == "invalid_json");
  CHECK(code_of("") == "missing_field");
  CHECK(code_of(std::string("\x80\x01N.", 4)) == "unsupported");
  // Stack underflow, APPEND to a dict, wrong top-level type.
  CHECK(code_of(std::string("\x80\x04"
                            "a.",
                            4)) == "invalid_json");
  CHECK(code_of(std::string("\x80\x04}Na.", 6)) == "invalid_json");
  CHECK(code_of(P(I(5))) == "invalid_type");
  // A field of the wrong type names it.
  const json t = read(snap(D(S("action") + S("alloc") + S("addr") + I(4096) + S("size") + S("x"))));
  CHECK(t["error"]["code"] == "invalid_type");
  CHECK(t["error"]["field"] == "snapshot.device_traces.size");
  CHECK(read(real)["ok"] == true);
}

TEST_CASE("snapshot: a non-finite allocator setting is not a result (fuzzer finding)") {
  // tests/fuzz/regressions_snapshot/: garbage_collection_threshold as BINFLOAT NaN reached the
  // result as a non-finite number (an internal error). A threshold is in [0, 1); NaN is unset.
  const std::string nan = std::string("G\x7f\xf8\0\0\0\0\0\0", 9);
  const std::string s = P(D(S("device_traces") + L(L(E("alloc", 4096, 100))) +
                            S("allocator_settings") + D(S("garbage_collection_threshold") + nan)));
  const json r = read(s);
  REQUIRE(r["ok"] == true);
  CHECK(r["result"]["allocatorSettings"]["garbageCollectionThreshold"] == 0.0);
}

TEST_CASE("snapshot: a trace entry inside its own frames list (fuzzer finding)") {
  // tests/fuzz/regressions_snapshot/: a dict with action, filename and name, memoised, listed in
  // its own frames list; converting it as a frame while converting it as an entry freed its
  // items twice (heap-use-after-free). Now: invalid_type naming the frames.
  std::string d = std::string("}\x94(") + S("action") + S("alloc") + S("addr") + I(4096) +
                  S("size") + I(100) + S("filename") + S("f") + S("name") + S("n") + S("frames") +
                  "](h" + std::string(1, '\0') + "eu";
  const json r = read(P(D(S("device_traces") + L(L(d)))));
  CHECK(r["error"]["code"] == "invalid_type");
  CHECK(r["error"]["field"] == "snapshot.device_traces.frames");
  CHECK(read(snap(E("alloc", 4096, 100)))["ok"] == true);
}

TEST_CASE("snapshot: memory_stats() JSON and the figures") {
  // reserved 3 GiB, allocated 1 GiB: gap 2 GiB >= 25 % of reserved and >= 128 MiB.
  const json r = read(R"({"allocated_bytes.all.peak": 1073741824,
                          "reserved_bytes.all.peak": 3221225472, "num_ooms": 0,
                          "active.all.current": 3})");
  REQUIRE(r["ok"] == true);
  CHECK(r["result"]["source"] == "memoryStats");
  CHECK(r["result"]["peak"]["allocatedBytes"] == 1073741824ULL);
  REQUIRE(r["result"]["causes"].size() == 1);
  CHECK(r["result"]["causes"][0]["code"] == "reserved_over_allocated");
  CHECK(r["result"]["causes"][0]["params"]["gapBytes"] == 2147483648.0);
  CHECK(read(R"({"allocated_bytes.all.peak": -1})")["error"]["field"] ==
        "snapshot.allocated_bytes.all.peak");
  CHECK(read(R"({"x": 1})")["error"]["code"] == "missing_field");
}

TEST_CASE("snapshot: the entry point with bytes") {
  const json a = json::parse(call_with_bytes("checkpointSize", "{}", "x"));
  CHECK(a["error"]["code"] == "inconsistent");
  CHECK(json::parse(call("readSnapshot", "{}"))["error"]["code"] == "missing_field");
  CHECK(json::parse(call_with_bytes("readSnapshots", "{}", "x"))["error"]["code"] ==
        "unknown_function");
  CHECK(read(snap(E("alloc", 4096, 100)), R"({"pionts": 3})")["error"]["code"] == "unknown_key");
}

TEST_CASE("snapshot fixtures: gradients kept between steps, from a real CPU loop") {
  for (const char* name : {"mlp_adam_keep_grads", "mlp_adam_set_to_none"}) {
    INFO(name);
    const json ex = json::parse(file(std::string(name) + ".expected.json"));
    const json r = read(file(std::string(name) + ".pickle"), R"({"points": 50})");
    REQUIRE(r["ok"] == true);
    const json& x = r["result"];
    CHECK(x["events"]["total"] == ex["traceEntries"]);
    CHECK(x["events"]["alloc"] == ex["allocs"]);
    CHECK(x["events"]["freeRequested"] == ex["frees"]);
    CHECK(x["steps"]["method"] == "optimizer-frames");
    CHECK(x["steps"]["count"] == ex["steps"]);
    // Requested bytes at the peak: the profiler's own running total after that entry.
    const uint64_t peak = x["peak"]["event"];
    CHECK(x["peak"]["requestedBytes"] == ex["totalAllocatedAfterEntry"][peak]);
    CHECK(x["peak"]["requestedBytes"] == ex["maxTotalAllocated"]);
    // What is live at the peak (step 1's optimizer step): the gradients and Adam's state.
    CHECK(x["peak"]["categories"]["gradients"] == ex["gradBytesRounded"]);
    CHECK(x["peak"]["categories"]["optimizerState"] == ex["optimizerStateBytesRounded"]);
    CHECK(x["peak"]["phase"] == "optimizer");
    const bool kept = !ex["setToNone"].get<bool>();
    bool has_cause = false;
    for (const auto& c : x["causes"])
      if (c["code"] == "gradients_kept_between_steps") {
        has_cause = true;
        CHECK(c["params"]["bytes"] == ex["gradBytesRounded"].get<double>());
        CHECK(c["params"]["step"] == 2.0);
      }
    CHECK(has_cause == kept);
    CHECK(x["keptGradients"]["bytes"] == (kept ? ex["gradBytesRounded"].get<uint64_t>() : 0));
  }
}

TEST_CASE("snapshot fixtures: compared with the prediction of the same run") {
  const std::string req = R"({"request": {"mlp": {"sizes": [64, 128, 128, 32]}, "microBatch": 32,
      "optimizer": "adam", "runtime": "pytorch-cpu"}})";
  const json r =
      json::parse(call_with_bytes("compareSnapshot", req, file("mlp_adam_keep_grads.pickle")));
  REQUIRE(r["ok"] == true);
  const json& x = r["result"];
  const json ex = json::parse(file("mlp_adam_keep_grads.expected.json"));
  // The prediction is peakMemory's own result for the request.
  const json p = json::parse(call("peakMemory", req.substr(12, req.size() - 13)));
  REQUIRE(p["ok"] == true);
  CHECK(x["predicted"]["allocatedPeakBytes"] == p["result"]["allocatedPeakBytes"]);
  bool grads = false;
  for (const auto& row : x["categories"])
    if (row["category"] == "gradients") {
      grads = true;
      CHECK(row["measuredBytes"] == ex["gradBytesRounded"]);
      CHECK(row["predictedBytes"] == p["result"]["breakdown"]["gradients"]["bytes"]);
      CHECK(row["differenceBytes"].get<int64_t>() ==
            row["measuredBytes"].get<int64_t>() - row["predictedBytes"].get<int64_t>());
    }
  CHECK(grads);
  CHECK(x["predictedSeries"].size() == p["result"]["timeline"].size());
  bool kept = false;
  for (const auto& c : x["causes"]) kept = kept || c["code"] == "gradients_kept_between_steps";
  CHECK(kept);
  // A request error names its field inside `request`.
  const json bad = json::parse(call_with_bytes(
      "compareSnapshot", R"({"request": {"microBatch": 0}})", file("mlp_adam_keep_grads.pickle")));
  CHECK(bad["error"]["field"].get<std::string>().rfind("request", 0) == 0);
  // Figures alone.
  const json f = json::parse(
      call_with_bytes("compareSnapshot",
                      R"({"request": {"model": {"preset": "gpt2"}, "microBatch": 1, "seqLen": 128},
          "measured": {"maxAllocatedBytes": 2000000000, "nvidiaSmiUsedBytes": 3000000000}})",
                      ""));
  REQUIRE(f["ok"] == true);
  CHECK(f["result"]["measured"].is_null());
  CHECK(f["result"]["totals"].size() == 2);
}
