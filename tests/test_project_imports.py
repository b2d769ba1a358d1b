"""Import resolution for project-wide analysis: the project root, the folders absolute imports are
looked up in (the file's folder, literal sys.path additions, above its package, the root and its
src/), relative imports, packages and namespace packages, and what never resolves."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from torchlint.model import Model
from torchlint.project import imports, layout, syspath


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def resolver_for(path: Path, source: str = "") -> imports.Resolver:
    model = Model(cst.parse_module(source))
    return imports.Resolver(path, layout.search_roots(path, syspath.added_folders(model, path)))


def test_project_root_is_the_nearest_marked_folder(tmp_path):
    write(tmp_path, {"proj/pyproject.toml": "", "proj/tools/deep/x.py": ""})
    assert layout.project_root(tmp_path / "proj/tools/deep") == tmp_path / "proj"
    (tmp_path / "proj/tools/.git").mkdir()
    layout.project_root.cache_clear()
    assert layout.project_root(tmp_path / "proj/tools/deep") == tmp_path / "proj/tools"


def test_search_roots_in_the_order_python_uses(tmp_path):
    write(tmp_path, {"setup.py": "", "src/pkg/__init__.py": "", "src/pkg/sub/__init__.py": "", "src/pkg/sub/m.py": ""})
    roots = layout.search_roots(tmp_path / "src/pkg/sub/m.py")
    assert roots == (tmp_path / "src/pkg/sub", tmp_path / "src", tmp_path)


def test_absolute_imports_from_the_script_folder_the_package_base_and_src(tmp_path):
    write(
        tmp_path,
        {
            "pyproject.toml": "",
            "train.py": "",
            "engine.py": "",
            "utils/__init__.py": "",
            "utils/dist.py": "",
            "src/lib/__init__.py": "",
            "src/lib/data.py": "",
            "tools/run.py": "",
        },
    )
    resolver = resolver_for(tmp_path / "train.py")
    assert resolver.module("engine") == tmp_path / "engine.py"
    assert resolver.module("utils") == tmp_path / "utils/__init__.py"
    assert resolver.module("utils.dist") == tmp_path / "utils/dist.py"
    assert resolver.module("lib.data") == tmp_path / "src/lib/data.py"
    assert resolver.module("utils.missing") is None
    assert resolver_for(tmp_path / "tools/run.py").module("engine") == tmp_path / "engine.py"  # via the root


def test_relative_imports(tmp_path):
    write(tmp_path, {"pkg/__init__.py": "", "pkg/a/__init__.py": "", "pkg/a/m.py": "", "pkg/b.py": ""})
    resolver = resolver_for(tmp_path / "pkg/a/m.py")
    assert resolver.module("", 1) == tmp_path / "pkg/a/__init__.py"
    assert resolver.module("b", 2) == tmp_path / "pkg/b.py"
    assert resolver.module("m", 1) == tmp_path / "pkg/a/m.py"
    assert resolver.submodule(tmp_path / "pkg/__init__.py", "b") == tmp_path / "pkg/b.py"
    assert resolver.submodule(tmp_path / "pkg/b.py", "x") is None


def test_a_regular_package_wins_over_a_namespace_folder_earlier_on_the_path(tmp_path):
    write(tmp_path, {"setup.cfg": "", "app/models/readme.txt": "", "models/__init__.py": "", "models/net.py": ""})
    resolver = resolver_for(tmp_path / "app/run.py")
    assert resolver.module("models.net") == tmp_path / "models/net.py"


def test_standard_library_and_known_libraries_never_resolve_into_the_project(tmp_path):
    write(tmp_path, {"pyproject.toml": "", "torch/__init__.py": "", "json.py": "", "train.py": ""})
    resolver = resolver_for(tmp_path / "train.py")
    assert resolver.module("torch") is None
    assert resolver.module("json") is None


@pytest.mark.parametrize(
    "line",
    [
        "sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'common'))",
        "sys.path.append(str(Path(__file__).resolve().parent.parent / 'common'))",
        "sys.path.append(os.path.abspath(os.path.dirname(os.path.dirname(__file__)) + '/common'))",
        "sys.path.insert(0, str(Path(__file__).parents[1] / 'common'))",
        "sys.path.append('../common')",
    ],
)
def test_literal_sys_path_additions(tmp_path, line):
    write(tmp_path, {"common/helpers.py": "", "scripts/train.py": ""})
    source = f"import os, sys\nfrom pathlib import Path\n{line}\n"
    assert resolver_for(tmp_path / "scripts/train.py", source).module("helpers") == tmp_path / "common/helpers.py"


@pytest.mark.parametrize(
    "lines",
    [
        "here = os.path.dirname(__file__)\ncommon = os.path.join(here, '..', 'common')\nsys.path.insert(0, common)",
        "def add(folder):\n    sys.path.insert(0, folder)\nadd(os.path.join(os.path.dirname(__file__), '..', 'common'))",
    ],
)
def test_sys_path_additions_through_names_assigned_once_and_helpers(tmp_path, lines):
    write(tmp_path, {"common/helpers.py": "", "scripts/train.py": ""})
    source = f"import os, sys\n{lines}\n"
    assert resolver_for(tmp_path / "scripts/train.py", source).module("helpers") == tmp_path / "common/helpers.py"


def test_a_name_read_before_its_assignment_adds_nothing(tmp_path):
    write(tmp_path, {"common/helpers.py": "", "scripts/train.py": ""})
    source = "import sys\nsys.path.append(common)\ncommon = '../common'\n"
    assert resolver_for(tmp_path / "scripts/train.py", source).module("helpers") is None


def test_an_imported_project_module_that_extends_sys_path_extends_it_for_the_importer(tmp_path):
    from torchlint.project.index import FileView, Index

    adder = "import os, sys\nsys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'lib'))\n"
    write(tmp_path, {"pyproject.toml": "", "lib/core/__init__.py": "", "lib/core/steps.py": "", "tools/_paths.py": adder})
    for script, found in (("import _paths\nfrom core import steps\n", tmp_path / "lib/core/__init__.py"), ("", None)):
        model = Model(cst.parse_module(script), str(tmp_path / "tools/train.py"))
        view = FileView.for_file(Index(), str(tmp_path / "tools/train.py"), model)
        assert view.resolver.module("core") == found


def test_a_sys_path_addition_that_is_not_literal_adds_nothing(tmp_path):
    write(tmp_path, {"common/helpers.py": "", "scripts/train.py": ""})
    source = "import os, sys\nsys.path.append(os.environ['COMMON'])\n"
    assert resolver_for(tmp_path / "scripts/train.py", source).module("helpers") is None


def test_what_import_statements_bind():
    model = Model(cst.parse_module("import a.b\nimport c.d as e\nfrom ..f import g as h, i\nfrom . import j\n"))
    found = {b.name: imports.spec_of(b) for b in model.all_bindings() if b.how == "import"}
    assert found == {
        "a": imports.ImportSpec("a"),
        "e": imports.ImportSpec("c.d"),
        "h": imports.ImportSpec("f", 2, "g"),
        "i": imports.ImportSpec("f", 2, "i"),
        "j": imports.ImportSpec("", 1, "j"),
    }


def star_names(tmp_path: Path, files: dict[str, str], script: str) -> Model:
    """The model of ``script`` (train.py) with its project view, over ``files`` written beside it."""
    from torchlint.project.index import FileView, Index

    write(tmp_path, {"pyproject.toml": "", **files, "train.py": script})
    model = Model(cst.parse_module(script), str(tmp_path / "train.py"))
    model.project = FileView.for_file(Index(), str(tmp_path / "train.py"), model)
    return model


def qualified_calls(model: Model) -> dict[str, str | None]:
    return {model.module.code_for_node(call.func): model.call_name(call) for call in model.calls}


def test_a_star_import_of_a_project_module_binds_what_it_imports_through_its_own_star_imports(tmp_path):
    model = star_names(
        tmp_path,
        {"base.py": "import torch\nfrom torch.utils.data import DataLoader as Loader\n", "nets.py": "import torch.nn as nn\nfrom base import *\n"},
        "from nets import *\nLoader(data)\nnn.Linear(2, 2)\ntorch.optim.SGD(params)\n",
    )
    assert qualified_calls(model) == {
        "Loader": "torch.utils.data.DataLoader",
        "nn.Linear": "torch.nn.Linear",
        "torch.optim.SGD": "torch.optim.SGD",
    }


@pytest.mark.parametrize(
    "nets",
    [
        "import torch\n__all__ = ['Net']\n",  # only the listed names are exported: not torch
        "import torch\n__all__ = ['Net'] + extra\n",  # a computed list: any name may be exported
        "from numpy import *\n",  # an outside module's star import may bind anything
        "torch = None\n",  # bound to a value, not an import
    ],
)
def test_a_star_imported_name_whose_value_the_model_cannot_tell_stays_unknown(tmp_path, nets):
    model = star_names(tmp_path, {"nets.py": nets}, "from nets import *\ntorch.optim.SGD(params)\n")
    assert qualified_calls(model) == {"torch.optim.SGD": None}


def test_star_imports_that_bind_a_name_differently_leave_it_unknown(tmp_path):
    model = star_names(
        tmp_path,
        {"a.py": "import torch as backend\n", "b.py": "import numpy as backend\n"},
        "from a import *\nfrom b import *\nbackend.zeros(3)\n",
    )
    assert qualified_calls(model) == {"backend.zeros": None}


def test_a_name_the_file_binds_itself_is_not_taken_from_a_star_import(tmp_path):
    model = star_names(tmp_path, {"nets.py": "import torch\n"}, "from nets import *\nfor torch in tools:\n    torch.optim.SGD(params)\n")
    assert qualified_calls(model) == {"torch.optim.SGD": None}


def test_a_literal_all_lists_what_a_star_import_binds(tmp_path):
    model = star_names(tmp_path, {"nets.py": "import torch\n__all__ = ('torch',)\n"}, "from nets import *\ntorch.optim.SGD(params)\n")
    assert qualified_calls(model) == {"torch.optim.SGD": "torch.optim.SGD"}


def lookup_names(tmp_path: Path, files: dict[str, str], script: str) -> dict[str, str | None]:
    """The project function or class each call of ``script`` refers to, by its name."""
    model = star_names(tmp_path, files, script)
    found = {}
    for call in model.calls:
        ref = model.project.lookup(call.func)
        found[model.module.code_for_node(call.func)] = None if ref is None else getattr(ref, "klass", ref).name
    return found


def test_a_package_attribute_is_found_through_the_packages_star_imports(tmp_path):
    files = {
        "pkg/__init__.py": "from .nets import *\nfrom .extra import *\n",
        "pkg/nets.py": "import torch\nclass Net:\n    pass\n\ndef build():\n    return Net().to('cuda')\n",
        "pkg/extra.py": "import torch\n__all__ = ['helper']\nclass Hidden:\n    pass\ndef helper(x):\n    return x.cuda()\n",
    }
    script = "import pkg\npkg.Net()\npkg.build()\npkg.helper()\npkg.Hidden()\npkg.nets.Net()\n"
    assert lookup_names(tmp_path, files, script) == {
        "pkg.Net": "Net", "pkg.build": "build", "pkg.helper": "helper", "pkg.Hidden": None, "pkg.nets.Net": "Net",
    }


@pytest.mark.parametrize(
    "compat, found",
    [
        ("from .base import Base\nOld = Base\n", "Base"),  # kept under its old name
        ("from .base import Base\nOlder = Base\nOld = Older\n", "Base"),  # an alias of an alias
        ("from .base import Base, Other\nOld = Base\nif late:\n    Old = Other\n", None),  # set twice
        ("Old = object\n", None),  # a builtin, not a class of the project
        ("from .base import *\nOld = Base\n", "Base"),  # its value from a star import
    ],
)
def test_a_module_level_alias_of_a_project_class_is_that_class(tmp_path, compat, found):
    files = {"pkg/__init__.py": "from .compat import *\n", "pkg/base.py": "class Base:\n    pass\nclass Other:\n    pass\n", "pkg/compat.py": compat}
    assert lookup_names(tmp_path, files, "import pkg\nfrom pkg.compat import Old\nOld()\npkg.Old()\n") == {"Old": found, "pkg.Old": found}


def test_a_project_function_reached_through_a_star_import_is_summarised(tmp_path):
    model = star_names(
        tmp_path,
        {"helpers.py": "def to_gpu(module):\n    return module.cuda()\n", "nets.py": "from helpers import *\n"},
        "from nets import *\nto_gpu(model)\n",
    )
    (call,) = model.calls
    assert model.project.lookup(call.func).name == "to_gpu"
