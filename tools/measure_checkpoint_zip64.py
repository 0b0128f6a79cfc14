#!/usr/bin/python3
"""Measures one torch.save file above 4 GiB (zip64 records) for trainmem's container model.

Run:  /usr/bin/python3 tools/measure_checkpoint_zip64.py > tests/fixtures/torch_checkpoint_zip64.json
A module with a 3-value fp32 parameter and a persistent uint8 buffer of 2^32 + 1000 bytes: the
buffer's record is larger than 4 GiB and the record after it starts past 4 GiB, so both
zip64 paths of the writer (sizes and offsets) are exercised. Needs ~9 GB of free disk+RAM.
"""
import json
import os
import sys
import tempfile
import zipfile

import torch
from torch import nn

N = 2**32 + 1000


class Big(nn.Module):
    def __init__(self):
        super().__init__()
        self.b = nn.Parameter(torch.zeros(3))
        self.register_buffer("a", torch.zeros(N, dtype=torch.uint8))


def main():
    m = Big()
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR", "/tmp")) as tmp:
        path = os.path.join(tmp, "big.pt")
        torch.save(m.state_dict(), path)
        size = os.path.getsize(path)
        with zipfile.ZipFile(path) as z:
            recs = [{"name": i.filename, "offset": i.header_offset, "size": i.file_size}
                    for i in z.infolist()]
    doc = {"about": __doc__.strip(), "torch": torch.__version__,
           "request": {"model": {"tensors": [{"name": "b", "shape": [3]}],
                                 "buffers": [{"name": "a", "shape": [N], "dtype": "uint8"}],
                                 "modules": [""]},
                       "format": "torch", "includeOptimizer": False, "fileName": "big.pt"},
           "measured": {"fileBytes": size, "records": recs}}
    json.dump(doc, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
