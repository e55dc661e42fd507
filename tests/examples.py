"""How many generated examples the property-based and schema-driven tests take.

``COGITATOR_TEST_PROFILE`` picks the counts:

- ``ci`` (the default, what ``make test`` and CI run): fewer examples per test, every
  property, rule, phase and check still run;
- ``full``: the counts each test names as its full count, as before the CI profile
  existed (``COGITATOR_TEST_PROFILE=full make test``).

The same variable selects the Hypothesis profile of the same name (``tests/conftest.py``),
which sets the count of the tests that name none.
"""

from __future__ import annotations

import os

PROFILES = ("ci", "full")
PROFILE = os.environ.get("COGITATOR_TEST_PROFILE", "ci")
if PROFILE not in PROFILES:
    raise RuntimeError(f"COGITATOR_TEST_PROFILE must be ci or full, not {PROFILE!r}")

# Examples of a test that names no count: Hypothesis's own default in the full profile.
DEFAULT_FULL = 100
DEFAULT_CI = 50


def examples(full: int, ci: int) -> int:
    """``full`` in the full profile, ``ci`` in the CI profile."""
    return full if PROFILE == "full" else ci
