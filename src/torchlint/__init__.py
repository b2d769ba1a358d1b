"""torchlint: a static analyzer for PyTorch training scripts."""

__version__ = "0.1.0"
ISSUES_URL = "https://github.com/torchlint/torchlint/issues"
