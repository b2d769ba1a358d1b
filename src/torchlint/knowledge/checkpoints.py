"""Checkpoints: the calls that restore saved tensors, and what shows that a loaded object holds
a model's parameters."""

from __future__ import annotations

# Calls that restore each saved tensor onto the device it was saved from unless `map_location`
# says otherwise, with the position `map_location` takes when passed positionally.
LOADS = {"torch.load": 1}
# ... and the calls that write what they restore: a load of the file the same code just saved
# runs on the device that saved it.
SAVES = frozenset({"torch.save"})
# Checkpoint callbacks of training frameworks, which write checkpoints while `fit()` runs and keep
# their paths in these attributes; a trainer keeps its own in `checkpoint_callback`. After this
# run's `fit()`, `torch.load(keeper.best_model_path)` reads a file this run wrote, on this machine.
CHECKPOINT_KEEPERS = frozenset({
    "pytorch_lightning.callbacks.ModelCheckpoint",
    "pytorch_lightning.callbacks.model_checkpoint.ModelCheckpoint",
    "lightning.pytorch.callbacks.ModelCheckpoint",
    "lightning.pytorch.callbacks.model_checkpoint.ModelCheckpoint",
    "lightning.pytorch.ModelCheckpoint",
})
KEPT_PATHS = frozenset({"best_model_path", "last_model_path", "kth_best_model_path"})
TRAINER_KEEPER = "checkpoint_callback"
FIT_METHODS = frozenset({"fit"})
# Calls that draw a name no earlier run can have used: a checkpoint path built from one is a file
# this run writes (a fresh early-stopping file), never one left by another machine.
FRESH_NAMES = frozenset(
    {"uuid.uuid1", "uuid.uuid4", "tempfile.mkdtemp", "tempfile.mkstemp", "tempfile.NamedTemporaryFile",
     "tempfile.TemporaryDirectory"}
)

# Calls that read back an object a run wrote (its settings, pickled or as text): settings a run
# restores from one are the saving run's.
SETTINGS_READERS = frozenset({"pickle.load", "json.load", "yaml.load", "yaml.safe_load", "torch.load", "joblib.load"})

# What shows that a loaded object holds a model's parameters, saved wherever training ran: it is
# handed to `load_state_dict` (of a module, an optimizer, a scheduler), or it is a pickled module
# itself (called, or asked for its parameters or mode).
RESTORING_METHODS = frozenset({"load_state_dict"})
MODULE_METHODS = frozenset({"eval", "train", "parameters", "named_parameters", "state_dict", "modules", "forward"})
# Objects whose state is numbers, not tensors (a learning-rate schedule, a loss scaler): their
# `load_state_dict` restores nothing onto a device. Qualified names, or prefixes ending in ".".
NUMERIC_STATE_MAKERS = (
    "torch.optim.lr_scheduler.", "torch.cuda.amp.GradScaler", "torch.amp.GradScaler", "torch.GradScaler",
    "transformers.get_", "transformers.optimization.get_", "diffusers.optimization.get_",
)
# ... and the names code gives such objects (`self.lr_scheduler`, `grad_scaler`), where the file
# does not show how they were made: the last part of the name ends with one of these.
NUMERIC_STATE_NAMES = ("scheduler", "scaler")
# Calls that make a model only the host runs: quantization packs its layers' weights for the CPU's
# quantized kernels (fbgemm, qnnpack), so the state a quantized model saves is host tensors, and a
# state that fits one (`quantized.load_state_dict(torch.load(path))`) was saved by one.
HOST_ONLY_MODEL_MAKERS = frozenset({
    "torch.quantization.quantize_dynamic", "torch.ao.quantization.quantize_dynamic",
    "torch.quantization.quantize", "torch.ao.quantization.quantize",
    "torch.quantization.convert", "torch.ao.quantization.convert",
})
# How code takes an entry out of a checkpoint dict (`ckpt.get("model")`), and the conversions a
# loaded module passes through (`torch.load(f).to(device)` is still the module).
ENTRY_METHODS = frozenset({"get", "pop"})
# `state.items()`, `state.values()`: the entries a loop copies, one by one, into a renamed state
ITEM_METHODS = frozenset({"items", "values"})
# The keyword under which libraries take a state dict to restore (`from_pretrained(..., state_dict=sd)`)
STATE_PARAMETER = "state_dict"
PASSING_METHODS = frozenset({"to", "cuda", "cpu", "float", "half", "double", "eval", "module"})
