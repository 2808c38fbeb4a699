"""W3 and W4 (SIE and EPL deflections): ``deflections.py`` limited to those two workloads; it
takes the same options.

    python benchmarks/w3_w4.py [--quick] [--no-peers]
"""

import sys

from deflections import main

if __name__ == "__main__":
    main(sys.argv[1:], default=("W3", "W4"))
