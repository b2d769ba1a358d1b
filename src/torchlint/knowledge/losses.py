"""Losses and what they expect as input; the calls that turn scores into probabilities."""

from __future__ import annotations

# Losses that apply log_softmax to their input themselves: they expect raw scores (logits).
LOGIT_LOSS_FUNCTIONS = frozenset({"torch.nn.functional.cross_entropy"})
LOGIT_LOSS_MODULES = frozenset({"torch.nn.CrossEntropyLoss", "torch.nn.modules.loss.CrossEntropyLoss"})
# Losses that expect log-probabilities (the output of log_softmax).
LOG_PROBABILITY_LOSS_FUNCTIONS = frozenset({"torch.nn.functional.nll_loss"})
LOG_PROBABILITY_LOSS_MODULES = frozenset({"torch.nn.NLLLoss", "torch.nn.modules.loss.NLLLoss"})

# Calls, methods and modules whose output is a probability distribution (rows summing to 1).
SOFTMAX_FUNCTIONS = frozenset({"torch.softmax", "torch.nn.functional.softmax", "torch.special.softmax"})
SOFTMAX_METHODS = frozenset({"softmax"})
SOFTMAX_MODULES = frozenset({"torch.nn.Softmax", "torch.nn.modules.activation.Softmax"})
# ... and the log of such a distribution (log_softmax), which `exp` turns back into one.
LOG_SOFTMAX_FUNCTIONS = frozenset({"torch.log_softmax", "torch.nn.functional.log_softmax", "torch.special.log_softmax"})
LOG_SOFTMAX_METHODS = frozenset({"log_softmax"})
LOG_SOFTMAX_MODULES = frozenset({"torch.nn.LogSoftmax", "torch.nn.modules.activation.LogSoftmax"})
EXP_FUNCTIONS = frozenset({"torch.exp"})
EXP_METHODS = frozenset({"exp"})
# Containers whose output is their last layer's (`nn.Sequential(..., nn.Softmax(dim=1))`).
SEQUENTIAL_MODULES = frozenset({"torch.nn.Sequential", "torch.nn.modules.container.Sequential"})

# Tensor methods that keep the values they are given (a view, a copy, a move, a dtype change):
# probabilities stay probabilities through them.
VALUE_PRESERVING_METHODS = frozenset(
    {
        "view", "reshape", "squeeze", "unsqueeze", "permute", "transpose", "contiguous", "flatten", "clone",
        "float", "double", "half", "bfloat16", "to", "cuda", "cpu", "view_as", "reshape_as", "type_as",
        "resize",  # deprecated out-of-place resize: a view of the same numbers in another shape
    }
)
# A module's forward called explicitly: `loss.forward(scores, y)` is `loss(scores, y)`.
FORWARD_METHOD = "forward"

# Arguments a module call accepts in host memory whatever device the module and its other inputs
# are on (position in the call, keyword): CTCLoss takes the sequence lengths as CPU tensors (the
# cuDNN implementation requires them there).
HOST_ARGUMENTS = {
    "torch.nn.CTCLoss": ((2, "input_lengths"), (3, "target_lengths")),
    "torch.nn.modules.loss.CTCLoss": ((2, "input_lengths"), (3, "target_lengths")),
}
