"""Test frameworks: what marks code as a test suite's."""

from __future__ import annotations

# Packages whose import makes a file test code, and torch's gradient checkers, which only a test
# of an operator's backward uses (`from torch.autograd import gradcheck`).
TEST_FRAMEWORKS = frozenset(
    {"pytest", "unittest", "hypothesis", "absl.testing", "torch.autograd.gradcheck", "torch.autograd.gradgradcheck"}
)
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
