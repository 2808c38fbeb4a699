"""W1 and W2 (elliptical Gaussian and 30-Gaussian MGE deflections): ``deflections.py`` limited
to those two workloads; it takes the same options.

    python benchmarks/w1_w2.py [--quick] [--no-peers]
"""

import sys

from deflections import main

if __name__ == "__main__":
    main(sys.argv[1:], default=("W1", "W2"))
