"""W5 (the imaging log-likelihood, one evaluation and batches): ``likelihood.py`` limited to
W5; it takes the same options.

    python benchmarks/w5.py [--quick] [--no-peers]
"""

import sys

from likelihood import main

if __name__ == "__main__":
    main(sys.argv[1:], default=("W5",))
