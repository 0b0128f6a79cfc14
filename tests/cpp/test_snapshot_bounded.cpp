// Snapshot arithmetic checked, never wrapped, and the reader's working memory bounded by the
// file (issue "bounded work"). Pickles are hand-built from CPython's Lib/pickle.py opcodes;
// expected values are hand sums noted beside each check.
#include <catch2/catch.hpp>
#include <string>

#include "io/request.hpp"
#include "trainmem/api.hpp"
#include "trainmem/snapshot.hpp"

using namespace trainmem;

namespace {

std::string S(const std::string& s) { return std::string("\x8c") + char(s.size()) + s; }
std::string U(uint64_t v) {  // LONG1 of 9 bytes: any uint64 (a sign byte 0 after it)
  std::string o = "\x8a\x09";
  for (int i = 0; i < 8; ++i) o += char((v >> (8 * i)) & 0xff);
  return o + '\0';
}
std::string D(const std::string& items) { return "}(" + items + "u"; }
std::string L(const std::string& items) { return "](" + items + "e"; }
std::string P(const std::string& body) { return std::string("\x80\x04", 2) + body + "."; }
std::string E(const char* action, uint64_t addr, uint64_t size) {
  return D(S("action") + S(action) + S("addr") + U(addr) + S("size") + U(size));
}
std::string snap(const std::string& events, const std::string& segments = "]") {
  return P(D(S("segments") + segments + S("device_traces") + L(L(events))));
}
json read(const std::string& bytes) {
  return json::parse(call_with_bytes("readSnapshot", "{}", bytes));
}

}  // namespace

TEST_CASE("snapshot bounded: sizes that would wrap are too_large, naming the field") {
  // An alloc of 2^64 - 1: rounded up to a multiple of 512 it wrapped to 0 ("Measured peak:
  // 0 KiB"). The sizes now add up with a check first.
  const json a = read(snap(E("alloc", 4096, ~uint64_t{0})));
  REQUIRE(a["ok"] == false);
  CHECK(a["error"]["code"] == "too_large");
  CHECK(a["error"]["field"] == "snapshot.device_traces.size");
  // Two segments of 2^62: reserved was 2^63 then 0 after the next.
  const std::string seg =
      "](" + D(S("address") + U(0) + S("total_size") + U(uint64_t{1} << 62)) +
      D(S("address") + U(uint64_t{1} << 62) + S("total_size") + U(uint64_t{1} << 62)) + "e";
  const json b = read(snap("", seg));
  REQUIRE(b["ok"] == false);
  CHECK(b["error"]["code"] == "too_large");
  CHECK(b["error"]["field"] == "snapshot.segments.total_size");
  // Allocs of 2^61 each: 2 fit (2^62), the third would pass 2^62 (signed sums overflowed,
  // an internal error under UBSan).
  const uint64_t big = uint64_t{1} << 61;
  const json c = read(snap(E("alloc", 0, big - 512) + E("alloc", big, big - 512)));
  CHECK(c["ok"] == true);
  const json d = read(snap(E("alloc", 0, big) + E("alloc", big, big) + E("alloc", 2 * big, big)));
  REQUIRE(d["ok"] == false);
  CHECK(d["error"]["code"] == "too_large");
  // and the module keeps answering
  CHECK(read(snap(E("alloc", 4096, 1000)))["result"]["peak"]["allocatedBytes"] == 1024);
}

TEST_CASE("snapshot bounded: a crafted file cannot make the reader hold more than its budget") {
  // Memo indices far apart (LONG_BINPUT of None at 0, 4096, 8192, ...): each touched a block of
  // 65,536 memo entries (437 MB for a 3.8 KB file before). Blocks are now 4,096 entries of 4
  // bytes, counted in the working memory: 8,000 of them (128 MB) pass the budget of 2 x the
  // file (40 KB) + 64 MiB, and the file is refused.
  std::string b = std::string("\x80\x04", 2) + "N";
  for (uint32_t i = 0; i < 8000; ++i) {
    const uint32_t at = i * 4096;
    b += 'r';
    for (int k = 0; k < 4; ++k) b += char((at >> (8 * k)) & 0xff);
  }
  b += '.';
  const json r = read(b);
  REQUIRE(r["ok"] == false);
  CHECK(r["error"]["code"] == "too_large");
  CHECK(r["error"]["field"] == "snapshot");
  CHECK(r["error"]["message"].get<std::string>().find("working memory") != std::string::npos);
  // A list of None in batches: 1 byte each in the file, 16 in the reader (x2 capacity).
  // 6,000,000 of them (6 MB) would hold 192 MB, over 2 x 6 MB + 64 MiB.
  std::string l = std::string("\x80\x04", 2) + "]";
  for (int batch = 0; batch < 6000; ++batch) l += "(" + std::string(1000, 'N') + "e";
  l += ".";
  const json n = read(l);
  REQUIRE(n["ok"] == false);
  CHECK(n["error"]["code"] == "too_large");
  CHECK(n["error"]["field"] == "snapshot");
}

TEST_CASE("snapshot bounded: a trace entry is 32 bytes, the stated reader memory") {
  // docs/snapshot.md, "Limits": the reader's working memory is at most
  // kReaderWorkPerFileByte x the file + kReaderWorkBaseBytes.
  CHECK(sizeof(snapshot::Event) == 32);
  CHECK(snapshot::kReaderWorkPerFileByte == 2);
  CHECK(snapshot::kReaderWorkBaseBytes == (uint64_t{64} << 20));
}
