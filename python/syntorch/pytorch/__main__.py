"""python -m syntorch.pytorch validate FILE: a measurements file's real-PyTorch rows (validate.py)."""

import sys

from .validate import main

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] != "validate":
        print("usage: python -m syntorch.pytorch validate FILE [--hw-dir DIR]", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[2:]))
