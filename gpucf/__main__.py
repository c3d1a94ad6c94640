"""`python -m gpucf`: the same as the `gpucf` command."""
import sys

from gpucf.cli import main

sys.exit(main())
