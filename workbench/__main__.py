"""``python -m workbench``: the hlo-workbench command."""
import sys

from .views.cli import main

sys.exit(main())
