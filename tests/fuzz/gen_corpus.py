#!/usr/bin/env python3
"""Seed corpus and dictionary for the libFuzzer harness (tests/fuzz/fuzz_call.cpp).

Seeds: every request of tests/fixtures/golden.json (cases and errors), each as one file whose
first byte selects the function (index in trainmem::function_names() order), plus a few
hand-written hostile requests. Dictionary: tests/fuzz/json.dict plus every identifier-like
string literal in cpp/src/**/*.cpp and every key found in cpp/data/**.json, so that the fuzzer
can spell the request keys and enum values as the calculators land.
Usage: gen_corpus.py ROOT OUT_SEEDS_DIR OUT_DICT
"""
import hashlib
import json
import glob
import os
import re
import sys

FUNCTIONS = ["checkpointSize", "describeModel", "peakMemory", "accumulation", "placement", "presets"]

HOSTILE = [
    '{"model":{"params":1e400},"optimizer":"adam"}',
    '{"model":{"params":-0.0},"optimizer":"adam"}',
    '{"model":{"params":1e308},"optimizer":"adam"}',
    '{"model":{"params":18446744073709551616},"optimizer":"adam"}',
    '{"model":{"params":1000000000000000},"optimizer":"adamw","weightDtype":"fp64","masterWeights":true}',
    '{"model":{"params":2.5},"optimizer":"sgd"}',
    '{"model":{"params":"abc"},"optimizer":"sgd"}',
    '{"model":{"params":7},"optimizer":"sgd","microbatch":1}',
    '{"model":{"params":7},"optimizer":"sgd","stateDtype":"\\ud800"}',
    '{"chain":{"layers":[]},"budgetBytes":0}',
    '{"chain":{"layers":[{"savedBytes":1e19}]}}',
    "[" * 70 + "]" * 70,
    '{"a":' * 40 + "1" + "}" * 40,
    '"' + "x" * 300 + '"',
    "{}",
    "null",
]


def literals(root):
    words = set()
    src = os.path.join(root, "cpp", "src")
    for name in sorted(glob.glob(os.path.join(src, "**", "*.cpp"), recursive=True)):
        with open(name, encoding="utf-8") as f:
            words.update(re.findall(r'"([A-Za-z][A-Za-z0-9_.\-]{1,40})"', f.read()))
    data = os.path.join(root, "cpp", "data")

    def keys(v):
        if isinstance(v, dict):
            for k, x in v.items():
                words.add(k)
                keys(x)
        elif isinstance(v, list):
            for x in v:
                keys(x)
        elif isinstance(v, str) and 0 < len(v) <= 40:
            words.add(v)

    for dirpath, _, files in os.walk(data):
        for name in files:
            if name.endswith(".json"):
                try:
                    with open(os.path.join(dirpath, name), encoding="utf-8") as f:
                        keys(json.load(f))
                except ValueError:
                    pass
    return sorted(w for w in words if re.fullmatch(r"[A-Za-z0-9_.\-]+", w))


def main():
    root, seeds, dict_out = sys.argv[1:4]
    os.makedirs(seeds, exist_ok=True)
    with open(os.path.join(root, "tests", "fixtures", "golden.json"), encoding="utf-8") as f:
        golden = json.load(f)
    inputs = []
    for c in golden.get("cases", []) + golden.get("errors", []):
        if c.get("function") in FUNCTIONS:
            text = json.dumps(c["request"], separators=(",", ":"))
            inputs.append((FUNCTIONS.index(c["function"]), text))
    for i, text in enumerate(HOSTILE):
        for fn in range(len(FUNCTIONS)):
            inputs.append((fn, text))
    for fn, text in inputs:
        blob = bytes([fn]) + text.encode("utf-8")
        name = hashlib.sha1(blob).hexdigest()
        with open(os.path.join(seeds, name), "wb") as f:
            f.write(blob)
    with open(os.path.join(root, "tests", "fuzz", "json.dict"), encoding="utf-8") as f:
        base = f.read()
    with open(dict_out, "w", encoding="utf-8") as f:
        f.write(base)
        f.write("\n# generated: string literals of cpp/src and keys of cpp/data\n")
        for w in literals(root):
            f.write('"\\"%s\\""\n' % w)
    print("fuzz seeds: %d inputs; dictionary: %s" % (len(inputs), dict_out))


if __name__ == "__main__":
    main()
