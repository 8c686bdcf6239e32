"""`python -m tensorbridge` runs the CLI."""

import sys

from tensorbridge.cli.main import main

sys.exit(main())
