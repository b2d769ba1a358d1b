"""The training step as data: what computes gradients, what applies them, what clears them, what
switches a module between training and evaluation, which layers behave differently in the two
modes, what drops a tensor's autograd history, and which framework calls own the step."""

from __future__ import annotations

# `loss.backward()` on a tensor.
BACKWARD_METHOD = "backward"
# Methods of a framework object (or a LightningModule) that run backward on their first argument:
# `accelerator.backward(loss)`, `fabric.backward(loss)`, `self.manual_backward(loss)`.
BACKWARD_TAKING_METHODS = frozenset({"backward", "manual_backward"})
BACKWARD_FUNCTIONS = frozenset({"torch.autograd.backward"})
# A method that returns its argument scaled for backward: `scaler.scale(loss).backward()`.
LOSS_SCALING_METHODS = frozenset({"scale"})

# `optimizer.step()`, and `scaler.step(optimizer)` / anything `.step(optimizer)`.
STEP_METHOD = "step"
# Loss scalers of mixed precision: `scaler.step(x)` steps optimizer x, whatever built it.
GRAD_SCALERS = frozenset({"torch.cuda.amp.GradScaler", "torch.amp.GradScaler", "torch.GradScaler"})
# Methods that take an optimizer as argument and neither step nor clear it.
OPTIMIZER_READING_METHODS = frozenset({"unscale_", "update"})

# Any call or attribute with this in its name clears gradients: `optimizer.zero_grad()`,
# `model.zero_grad(set_to_none=True)`, a project's `zero_grad(model)`.
CLEARING_NAME = "zero_grad"
# Methods on a `.grad` tensor that reset it in place: `p.grad.zero_()`, `p.grad.data.fill_(0)`.
GRAD_RESETTING_METHODS = frozenset({"zero_", "fill_"})
# Methods on a `.grad` tensor that rescale it: accumulated gradients divided after the fact.
GRAD_SCALING_METHODS = frozenset({"div_", "mul_"})
GRAD_ATTRIBUTE = "grad"
# Collectives that combine a `.grad` across processes by hand, and their reduction argument
# (keyword, position): without one they add the gradients up (`ReduceOp.SUM`).
GRAD_REDUCTIONS = {"torch.distributed.all_reduce": ("op", 1), "torch.distributed.reduce": ("op", 2)}

# Context managers and decorators under which no graph is recorded.
NO_GRAD = frozenset(
    {
        "torch.no_grad",
        "torch.inference_mode",
        "torch.autograd.no_grad",
        "torch.autograd.inference_mode",
        "torch.autograd.grad_mode.no_grad",
        "torch.autograd.grad_mode.inference_mode",
    }
)
# `torch.set_grad_enabled(False)` too, with a literal False.
GRAD_SWITCH = frozenset({"torch.set_grad_enabled", "torch.autograd.set_grad_enabled"})

# `with accelerator.accumulate(model):` (accelerate) scales and syncs accumulated steps itself.
ACCUMULATION_CONTEXT_METHODS = frozenset({"accumulate"})

# Module methods that set the mode: `train()` / `train(True)` trains, `eval()` / `train(False)`
# evaluates.
TRAIN_METHOD = "train"
EVAL_METHOD = "eval"
PARAMETERS_METHOD = "parameters"  # `model.parameters()`, handed to an optimizer
# methods that run a module on its inputs as calling it does (`model.forward(x)`, a Hugging Face
# model's `model.generate(ids)`)
FORWARD_METHODS = frozenset({"forward", "generate"})
# `model.apply(fn)` runs fn on the module and every submodule: `model.apply(nn.Module.eval)` is
# `model.eval()` (the unbound methods, by the name they are reached under).
APPLY_METHOD = "apply"
UNBOUND_MODE_METHODS = {"torch.nn.Module.train": TRAIN_METHOD, "torch.nn.Module.eval": EVAL_METHOD}
# The attribute a module's own code reads to behave by mode.
TRAINING_FLAG = "training"
# Model builders whose models come back in training mode, as every new torch.nn.Module is (beside
# torch.nn's own layers and the model namespaces of modules.ZOO_NAMESPACES). Not `torch.hub.load`,
# whose entry point may call eval(), nor Hugging Face `from_pretrained`, which does.
TRAINING_MODE_BUILDERS = frozenset({"timm.create_model", "timm.models.create_model", "torchvision.models.get_model"})

# torch.nn layers whose forward depends on the mode: dropout is on only in training, batch norm
# normalises with batch statistics and updates its running ones only in training; transformer
# layers carry dropout (0.1 by default).
MODE_DEPENDENT_LAYERS = frozenset(
    {
        "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout",
        "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d",
        "SyncBatchNorm", "Transformer", "TransformerEncoderLayer", "TransformerDecoderLayer",
    }
)
# ... of which these drop activations with the probability of their argument `p` (first
# positional), and are inert with p = 0.
DROPOUT_LAYERS = frozenset({"Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"})
DROPOUT_RATE = "p"
# torch.nn containers whose mode-dependence is that of the modules they are given.
CONTAINERS = frozenset({"Sequential", "ModuleList", "ModuleDict"})

# Methods that turn a tensor into a value without autograd history: `loss.item()`,
# `loss.detach()`. (An attribute such as `loss.data`, or a builtin such as `float(loss)`, never
# carries a loss in the model's reading, so they need no entry.)
DETACHING_METHODS = frozenset({"item", "detach", "tolist", "numpy"})
# What a loss is the whole of: `sum(terms)`, `torch.stack(terms).sum()`, `terms.mean()`. The
# terms a model returns and the loss is built from carry the same autograd history.
TERM_REDUCING_BUILTINS = frozenset({"sum"})
TERM_REDUCING_FUNCTIONS = frozenset({"torch.sum", "torch.mean", "torch.stack", "torch.cat"})
TERM_REDUCING_METHODS = frozenset({"sum", "mean"})
# Methods on a list that keep what they are given: `losses.append(loss)`.
LIST_ACCUMULATING_METHODS = frozenset({"append", "extend", "insert"})
# Methods that drop what a list or deque holds: one called in the loop that appends keeps a window
# of the last steps, which does not grow (a `deque(maxlen=k)` drops by itself).
LIST_TRIMMING_METHODS = frozenset({"pop", "popleft", "clear", "remove"})
BOUNDED_CONTAINERS = frozenset({"collections.deque"})
BOUNDING_KEYWORD = "maxlen"

# pytest and unittest run functions whose names start with this, and collect classes whose names
# start with the other: their loops take a few steps on tiny models to check behaviour, not to
# train. (A function named just `test` is the evaluation pass of many example scripts.)
TEST_FUNCTION_PREFIX = "test_"
TEST_CLASS_PREFIX = "Test"

# Methods a framework calls once per batch or per step by contract: `nn.Module.forward` on every
# call of the module, Lightning's `*_step` hooks, an optimizer's or a scheduler's `step`. Code in
# them runs again and again (TL020: a copy there is paid each time).
PER_STEP_METHODS = frozenset({"forward", "step", "training_step", "validation_step", "test_step", "predict_step"})
