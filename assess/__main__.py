import sys

from assess.cli import main

sys.exit(main())
