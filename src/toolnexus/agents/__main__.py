"""``python -m toolnexus.agents``: the ``toolnexus-soul`` command line."""

from .cli import main

raise SystemExit(main())
