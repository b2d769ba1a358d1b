"""Whether a module's mode matters, and which mode it starts in.

- `mode_dependent(module)`: whether the module holds dropout or batch norm (or a layer built on
  them), so that `train()`/`eval()` changes what it computes;
- `built_training(module)`: whether it is in training mode when built, as every new
  torch.nn.Module is (not a model loaded whole or from a hub, which keeps the mode it was saved in).

Both follow classes of the file, containers and wrappers, modules a class is given and keeps, and
other modules of the project by their summaries.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import libcst as cst

from torchlint.knowledge import modules, training
from torchlint.model import constants
from torchlint.model.added_layers import layers
from torchlint.model.training import within
from torchlint.model.values import Kind, Value
from torchlint.model.walks import Walk

if TYPE_CHECKING:
    from torchlint.model import Model


class ModeDependence:
    def __init__(self, model: Model) -> None:
        self.model = model
        # not mode-dependent, for modules and classes built in terms of themselves
        self._dependent = Walk(self._find_dependent, False, key=id)
        self._dependent_classes = Walk(self._find_class_dependent, False)
        self._built_training = Walk(self._find_built_training, False, key=id)
        self._classes_built_training = Walk(self._find_class_built_training, False)

    def mode_dependent(self, module: Value) -> bool:
        """Whether the module holds dropout or batch norm (or a layer built on them): torch.nn
        layers, containers of them, same-file classes that build them or read `self.training`,
        and models from a zoo."""
        return self._dependent(module)

    def _find_dependent(self, module: Value) -> bool:
        if module.facts is not None:  # a module whose class the file does not show
            return module.facts.mode_dependent or any(self.mode_dependent(held) for held in self._held_modules(module))
        api = module.api or ""
        values = self.model.values
        call = module.node if isinstance(module.node, cst.Call) else None
        if api.startswith(modules.NN) and api.count(".") == 2:
            last = api.rsplit(".", 1)[1]
            if last in training.MODE_DEPENDENT_LAYERS:
                return call is None or not self._inert_dropout(call, last)
            if last in training.CONTAINERS and call is not None:
                return any(self._expression_dependent(layer) for layer in layers(self.model, module))
            return False
        if api in modules.WRAPPERS and call is not None and call.args:
            return any(self.mode_dependent(v) for v in values.of(call.args[0].value) if v.kind is Kind.MODULE)
        if api in self.model.classes:
            built = self._classes_built(module)
            return all(self.class_dependent(classdef) for classdef in built) or any(
                self.mode_dependent(held) for held in self._held_modules(module)
            )
        if api == "model zoo" or api in modules.ZOO_FUNCTIONS or api.startswith(modules.ZOO_NAMESPACES):
            return True
        return api.startswith(modules.PRETRAINED_LIBRARIES)

    def _expression_dependent(self, expr: cst.BaseExpression) -> bool:
        if type(expr) in (cst.List, cst.Tuple):
            return any(self._expression_dependent(element.value) for element in expr.elements)
        return any(v.kind is Kind.MODULE and self.mode_dependent(v) for v in self.model.values.of(expr))

    def class_dependent(self, classdef: cst.ClassDef) -> bool:
        return self._dependent_classes(classdef)

    def _find_class_dependent(self, classdef: cst.ClassDef) -> bool:
        model = self.model
        found = False
        for base in classdef.bases:
            name = model.qualified_name(base.value)
            if name is not None and name.startswith(modules.NN) and name.rsplit(".", 1)[1] in training.MODE_DEPENDENT_LAYERS:
                found = True
            elif isinstance(base.value, cst.Name) and base.value.value in model.classes:
                found |= self.class_dependent(model.classes[base.value.value])
        if not found:
            found = any(self._builds_dependent(call) for call in model.summaries.calls_within(classdef))
        if not found:
            found = any(
                within(model, read, classdef) for read in model.reads_table.get(f"self.{training.TRAINING_FLAG}", ())
            )
        return found

    def _builds_dependent(self, call: cst.Call) -> bool:
        model = self.model
        name = model.call_name(call)
        if name is not None and name.startswith(modules.NN) and name.count(".") == 2:
            last = name.rsplit(".", 1)[1]
            return last in training.MODE_DEPENDENT_LAYERS and not self._inert_dropout(call, last)
        if name is not None and (name in modules.ZOO_FUNCTIONS or name.startswith(modules.ZOO_NAMESPACES)):
            return True
        if isinstance(call.func, cst.Name) and call.func.value in model.classes:
            return self.class_dependent(model.classes[call.func.value])
        # a module another module of the project builds, by its summary
        built = model.values.project_returns(call)
        return built is not None and built.kind == Kind.MODULE.value and built.mode_dependent

    def _inert_dropout(self, call: cst.Call, layer: str) -> bool:
        """A dropout layer built with p = 0 (a literal, a constant, or a parameter every caller
        and the default leave at 0): it drops nothing in either mode."""
        if layer not in training.DROPOUT_LAYERS:
            return False
        rate = next((arg.value for arg in call.args if arg.keyword is not None and arg.keyword.value == training.DROPOUT_RATE), None)
        if rate is None and call.args and call.args[0].keyword is None and not call.args[0].star:
            rate = call.args[0].value
        return rate is not None and constants.value(self.model, rate) == 0

    def built_training(self, module: Value) -> bool:
        """Whether the module is in training mode when it is built, as every new torch.nn.Module
        is: a torch.nn layer, a model of torchvision's or timm's, a class of the file (or of
        another module of the project, by its summary) whose constructor sets no mode, or a
        wrapper of such a module. Not a model loaded whole (`torch.load`), from a hub or by
        `from_pretrained`, which come in the mode they were saved or set in."""
        return self._built_training(module)

    def _find_built_training(self, module: Value) -> bool:
        if module.facts is not None:
            return module.facts.built_training and all(
                self.built_training(held) and self.model.modes.mode_at(held, module.node).mode is None
                for held in self._held_modules(module)
            )
        api = module.api or ""
        call = module.node if isinstance(module.node, cst.Call) else None
        if api in modules.WRAPPERS:
            inner = self.model.values.of(call.args[0].value) if call is not None and call.args else frozenset()
            return bool(inner) and all(v.kind is Kind.MODULE and self.built_training(v) for v in inner)
        if api in self.model.classes:
            return all(self.class_built_training(classdef) for classdef in self._classes_built(module))
        if api.startswith(modules.NN) and api.count(".") == 2:
            return True
        return api == "model zoo" or api in training.TRAINING_MODE_BUILDERS or api.startswith(modules.ZOO_NAMESPACES)

    def _classes_built(self, module: Value) -> list[cst.ClassDef]:
        """The classes of the file an instance may be of: those the name called at its
        construction refers to there (a notebook may define a class twice under one name, the
        second time with dropout), else the last class of that name."""
        call = module.node
        if isinstance(call, cst.Call) and isinstance(call.func, cst.Name):
            found = [b.statement for b in self.model.reaching(call.func) if b.how == "class"]
            if found:
                return found
        return [self.model.classes[module.api]]

    def _held_modules(self, module: Value) -> Iterator[Value]:
        """The modules a class is given at construction and keeps as its own
        (`self.encoder = encoder`): their layers are its layers."""
        call = module.node
        if isinstance(call, cst.Call):
            for argument in self.model.summaries.stored_arguments(call):
                yield from (v for v in self.model.values.of(argument) if v.kind is Kind.MODULE)

    def class_built_training(self, classdef: cst.ClassDef) -> bool:
        return self._classes_built_training(classdef)

    def _find_class_built_training(self, classdef: cst.ClassDef) -> bool:
        """Its bases are torch's module classes or such classes of the file, and its constructor
        (and what that runs) calls no `train()`/`eval()`."""
        model = self.model
        for base in classdef.bases:
            name = model.qualified_name(base.value)
            if name is not None and (name in modules.MODULE_BASES or name.startswith(modules.NN)):
                continue
            if not (isinstance(base.value, cst.Name) and base.value.value in model.classes):
                return False
            if not self.class_built_training(model.classes[base.value.value]):
                return False
        init = model.summaries.method(classdef, "__init__")
        return init is None or not self.model.modes.calls_mode_method(init)
