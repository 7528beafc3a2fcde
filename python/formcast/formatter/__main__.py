"""``python -m formcast.formatter {format,eval,data} ...``"""

import sys

from .cli import main

sys.exit(main())
