#!/usr/bin/env python3
"""Converts a padless model directory written before the switch to safetensors: reads DIR/model.pt
(the TorchScript archive that older padless versions wrote) and writes DIR/model.safetensors with
the same parameter names, which padless loads without running a pickle reader (issue 13).
Only run it on a model.pt you trust: torch.jit.load itself reads the pickle.
    python3 scripts/convert_model_pt.py DIR
"""
import os
import sys

import torch
from safetensors.torch import save_file


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    src = os.path.join(sys.argv[1], "model.pt")
    dst = os.path.join(sys.argv[1], "model.safetensors")
    if not os.path.isfile(src):
        sys.exit(f"{src}: no such file")
    archive = torch.jit.load(src, map_location="cpu")
    tensors = {k: v.detach().contiguous() for k, v in archive.named_parameters()}
    if not tensors:
        sys.exit(f"{src}: holds no parameters")
    save_file(tensors, dst + ".tmp", metadata={"format": "pt", "writer": "padless"})
    os.replace(dst + ".tmp", dst)
    print(f"{dst}: {len(tensors)} tensors; {src} can be removed")


if __name__ == "__main__":
    main()
