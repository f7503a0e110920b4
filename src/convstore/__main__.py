"""``python -m convstore``: the command line."""

import sys

from convstore.cli import main

sys.exit(main())
