import sys

from helixd.cli.main import main

sys.exit(main())
