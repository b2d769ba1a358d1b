"""torchlint: a static analyzer for PyTorch training scripts."""

__version__ = "0.1.0"
