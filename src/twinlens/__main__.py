from twinlens.cli import main

raise SystemExit(main())
