import sys

from gpucore.cli import main

sys.exit(main())
