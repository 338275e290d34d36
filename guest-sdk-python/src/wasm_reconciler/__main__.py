"""Entry point of ``python -m wasm_reconciler``."""

import sys

from .build import main

sys.exit(main())
