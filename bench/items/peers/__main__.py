"""``python -m bench.items.peers``: the command line (``_cli.main``)."""

from ._cli import main

raise SystemExit(main())
