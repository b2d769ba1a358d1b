"""Modules: which calls build one, which hold no parameters, which wrap or take over one."""

from __future__ import annotations

NN = "torch.nn."

# torch.nn names that are not module classes.
NN_NOT_MODULES = frozenset(
    {"Parameter", "UninitializedParameter", "UninitializedBuffer", "Buffer", "init", "functional", "utils",
     "parallel", "modules", "parameter", "attention", "grad", "intrinsic", "qat", "quantized", "common_types"}
)
# torch.nn modules without parameters or buffers: nothing to move, so never "not moved" (TL002).
# Losses (every name ending in "Loss") are parameterless too: a class weight is given by the user,
# who places it.
NN_PARAMETERLESS = frozenset(
    {
        "ReLU", "ReLU6", "LeakyReLU", "ELU", "SELU", "CELU", "GELU", "SiLU", "Mish", "Sigmoid", "Tanh",
        "Softmax", "Softmax2d", "LogSoftmax", "Softmin", "Softplus", "Softsign", "Hardtanh", "Hardswish",
        "Hardsigmoid", "Hardshrink", "Softshrink", "Tanhshrink", "Threshold", "LogSigmoid", "GLU", "RReLU",
        "MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d", "AdaptiveMaxPool1d",
        "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d",
        "LPPool1d", "LPPool2d", "LPPool3d", "FractionalMaxPool2d", "FractionalMaxPool3d", "MaxUnpool1d",
        "MaxUnpool2d", "MaxUnpool3d", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout",
        "FeatureAlphaDropout", "Identity", "Flatten", "Unflatten", "Upsample", "UpsamplingNearest2d",
        "UpsamplingBilinear2d", "PixelShuffle", "PixelUnshuffle", "ChannelShuffle", "ZeroPad1d", "ZeroPad2d",
        "ZeroPad3d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "ReflectionPad1d", "ReflectionPad2d",
        "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d", "CircularPad1d",
        "CircularPad2d", "CircularPad3d", "Fold", "Unfold", "CosineSimilarity", "PairwiseDistance",
        "NLLLoss2d",  # the old name of NLLLoss, a loss like the rest
    }
)

# Wrappers that own their module's placement and scatter their inputs themselves: a module given
# to one of them is never "not moved" (TL002), and their inputs may stay on the host (TL004).
WRAPPERS = frozenset(
    {
        "torch.nn.DataParallel",
        "torch.nn.parallel.DataParallel",
        "torch.nn.parallel.DistributedDataParallel",
        "torch.nn.parallel.distributed.DistributedDataParallel",
        "torch.distributed.fsdp.FullyShardedDataParallel",
        "torch.distributed.fsdp.fully_shard",
        "torch.distributed._composable.fsdp.fully_shard",
    }
)
# Modules built from the modules given to them, whose parameters are those parts' own: they sit
# wherever their parts are.
CONTAINERS = frozenset(
    {
        "torch.nn.Sequential",
        "torch.nn.ModuleList",
        "torch.nn.ModuleDict",
        "torchvision.models._utils.IntermediateLayerGetter",
    }
)
# Calls that return their module argument itself (or a view sharing its parameters).
ALIASING_CALLS = frozenset({"torch.compile", "torch.nn.SyncBatchNorm.convert_sync_batchnorm"})
# Calls that return a copy of their argument, made where the original is at that moment.
COPYING_CALLS = frozenset({"copy.deepcopy", "copy.copy"})

# Model zoos: calls that build a module.
ZOO_FUNCTIONS = frozenset(
    {"timm.create_model", "timm.models.create_model", "torch.hub.load", "torchvision.models.get_model"}
)
# Every public lower-case function (and class) under these namespaces builds a model.
ZOO_NAMESPACES = ("torchvision.models.", "torchaudio.models.")
ZOO_NOT_MODELS = frozenset({"get_weight", "list_models", "get_model_weights", "get_model_builder", "utils", "feature_extraction"})
# Model loaders that return the model inside a tuple with its transforms: the function -> (the
# model's position in the tuple, whether the model goes to an accelerator when `device=` is left
# out). OpenAI CLIP's `clip.load` picks "cuda" when one is available; open_clip's loaders keep
# the model on the CPU unless told.
TUPLE_MODEL_LOADERS = {
    "clip.load": (0, True),
    "open_clip.create_model_and_transforms": (0, False),
    "open_clip.create_model_from_pretrained": (0, False),
}
# `<Class>.from_pretrained(...)` / `.from_config(...)` of these libraries builds a model when the
# class name says so (AutoModelForCausalLM, BertModel, UNet2DConditionModel, AutoencoderKL ...);
# tokenizers, processors, configs and pipelines are not modules.
PRETRAINED_LIBRARIES = ("transformers.", "diffusers.", "peft.")
PRETRAINED_CONSTRUCTORS = frozenset({"from_pretrained", "from_config", "from_single_file"})
MODEL_CLASS_MARKERS = ("Model", "For", "Autoencoder", "UNet", "VQ", "ControlNet", "Transformer2D")
NOT_MODEL_CLASS_MARKERS = ("Tokenizer", "Processor", "Config", "Pipeline", "FeatureExtractor", "Scheduler")
# Those libraries also ship twins of their models for other frameworks, named by a prefix
# (`FlaxBertModel`, `TFAutoModelForCausalLM`, `FlaxUNet2DConditionModel`): JAX and TensorFlow
# objects, not torch modules, with no `.to()` and placed by their own framework.
OTHER_FRAMEWORK_PREFIXES = ("Flax", "TF")

# Base classes that make a same-file class a module.
MODULE_BASES = frozenset(
    {
        "torch.nn.Module",
        "torch.nn.modules.module.Module",
        "pytorch_lightning.LightningModule",
        "lightning.LightningModule",
        "lightning.pytorch.LightningModule",
        "lightning.pytorch.core.LightningModule",
        "transformers.PreTrainedModel",
        "transformers.modeling_utils.PreTrainedModel",
    }
)

# Module methods that return the module itself.
SELF_RETURNING_METHODS = frozenset(
    {"to", "cuda", "cpu", "xpu", "mps", "npu", "hpu", "to_empty", "train", "eval", "half", "float", "double",
     "bfloat16", "requires_grad_", "type", "share_memory", "apply"}
)
# Module methods that change nothing about placement and let nothing escape.
INERT_METHODS = frozenset(
    {"train", "eval", "parameters", "named_parameters", "buffers", "named_buffers", "children", "named_children",
     "modules", "named_modules", "state_dict", "load_state_dict", "zero_grad", "requires_grad_", "half", "float",
     "double", "bfloat16", "register_forward_hook", "register_forward_pre_hook", "register_full_backward_hook",
     "extra_repr", "__repr__", "num_parameters", "get_parameter", "get_submodule", "forward", "save_pretrained",
     "print_trainable_parameters", "gradient_checkpointing_enable", "resize_token_embeddings", "generate",
     # questions torch.nn.Module answers about itself (its class name, a buffer, extra state)
     "_get_name", "get_buffer", "get_extra_state"}
)

# Module methods that hook code into its forward or backward pass.
HOOK_METHODS = frozenset(
    {"register_forward_hook", "register_forward_pre_hook", "register_full_backward_hook", "register_backward_hook",
     "register_full_backward_pre_hook"}
)

# Module methods that run no forward pass (placement, mode, parameters, hooks, saving): a call of
# one computes nothing with the network.
NON_COMPUTING_METHODS = (SELF_RETURNING_METHODS | INERT_METHODS) - {"forward", "generate"}

# Methods a module calls on itself while it is being built, which neither place it nor hand it to
# anyone: a constructor made of these (and of calls whose results the model knows) builds a module
# that stays where it is made.
BUILDING_METHODS = frozenset({"register_buffer", "register_parameter", "register_module", "add_module", "apply"})
# Methods that add a named layer to a module after it is built (a Sequential runs it last).
ADD_MODULE_METHODS = frozenset({"add_module", "register_module"})

# Calls that bind arguments to a class for later construction (`partial(Layer, device=device)`):
# a helper given one builds its modules with those arguments.
PARTIAL_APPLICATIONS = frozenset({"functools.partial"})

# Layers that are one linear map of their input: a model made of one of them, applied once, is
# a linear or logistic regression (a convex problem). SGConv (Wu et al. 2019, "Simplifying Graph
# Convolutional Networks") propagates features over K hops without parameters, then applies one
# linear layer.
LINEAR_MAPS = frozenset(
    {"torch.nn.Linear", "torch.nn.LazyLinear", "torch_geometric.nn.SGConv", "torch_geometric.nn.conv.SGConv"}
)
