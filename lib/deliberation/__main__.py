import sys

from deliberation.cli import main

sys.exit(main())
