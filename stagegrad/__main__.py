"""``python -m stagegrad``: the same command line as ``stagegrad``."""
import sys

from .cli import main

sys.exit(main())
