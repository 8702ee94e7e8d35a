"""``python -m graph``: the ``tessera`` command line (see :mod:`graph.cli`)."""

from graph.cli import main

raise SystemExit(main())
