"""``python -m twinlens``: the ``twinlens`` command."""

from twinlens.cli import main

raise SystemExit(main())
