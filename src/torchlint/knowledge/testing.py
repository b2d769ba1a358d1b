"""Test frameworks: what marks code as a test suite's."""

from __future__ import annotations

# Packages whose import makes a file test code.
TEST_FRAMEWORKS = frozenset({"pytest", "unittest", "hypothesis", "absl.testing"})
# Test-case base classes.
TEST_BASES = frozenset(
    {
        "unittest.TestCase",
        "unittest.IsolatedAsyncioTestCase",
        "absl.testing.absltest.TestCase",
        "absl.testing.parameterized.TestCase",
        "torch.testing._internal.common_utils.TestCase",
    }
)
