import sys

from nvperf_bridge.cli import main

sys.exit(main())
