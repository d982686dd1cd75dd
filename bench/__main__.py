"""``python -m bench``: neardup and its peers on the same corpus, one table (bench/run.py)."""

import sys

from .run import main

sys.exit(main())
