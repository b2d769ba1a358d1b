"""Configuration: discovery of the nearest configuration per file, every key, per-rule options
reaching the rule, and invalid configuration as exit 2 with a clear message."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from torchlint.config import ConfigError, ConfigResolver, Settings, load_config_file

from conftest import reported, write

pytestmark = pytest.mark.usefixtures("probe_rules", "in_tmp")


def findings(result) -> list[tuple[str, str]]:
    return sorted(reported(result))


BOTH = "probe()\nother()\n"


def test_each_file_uses_the_nearest_pyproject_upward(run_cli):
    write("pyproject.toml", '[tool.torchlint]\nselect = ["TL900"]\n')
    write("sub/pyproject.toml", '[tool.torchlint]\nselect = ["TL901"]\n')
    write("top.py", BOTH)
    write("sub/mid.py", BOTH)
    write("sub/deeper/low.py", BOTH)
    assert findings(run_cli(".")) == [
        ("sub/deeper/low.py", "TL901"),
        ("sub/mid.py", "TL901"),
        ("top.py", "TL900"),
    ]


def test_a_pyproject_without_a_torchlint_table_is_passed_over(run_cli):
    write("pyproject.toml", '[tool.torchlint]\nselect = ["TL900"]\n')
    write("sub/pyproject.toml", '[project]\nname = "sub"\n[tool.other]\nx = 1\n')
    write("sub/t.py", BOTH)
    assert findings(run_cli(".")) == [("sub/t.py", "TL900")]


def test_dotted_keys_count_as_the_torchlint_table(run_cli):
    write("pyproject.toml", 'tool.torchlint.select = ["TL901"]\n')
    write("t.py", BOTH)
    assert findings(run_cli("t.py")) == [("t.py", "TL901")]


def test_torchlint_toml_has_top_level_keys_and_wins_over_pyproject(run_cli):
    write("pyproject.toml", '[tool.torchlint]\nselect = ["TL900"]\n')
    write("torchlint.toml", 'select = ["TL901"]\n')
    write("t.py", BOTH)
    assert findings(run_cli("t.py")) == [("t.py", "TL901")]


def test_config_option_replaces_discovery(run_cli):
    write("pyproject.toml", '[tool.torchlint]\nselect = ["TL900"]\n')
    write("elsewhere/custom.toml", 'ignore = ["TL900"]\n')
    write("t.py", BOTH)
    assert findings(run_cli("--config", "elsewhere/custom.toml", "t.py")) == [("t.py", "TL901")]


def test_config_may_name_a_pyproject(run_cli):
    write("other/pyproject.toml", '[tool.torchlint]\nextend-select = ["TL901"]\nignore = ["TL900"]\n')
    write("t.py", BOTH)
    assert findings(run_cli("--config", "other/pyproject.toml", "t.py")) == [("t.py", "TL901")]


def test_ignore_and_the_more_specific_prefix(run_cli):
    write("pyproject.toml", '[tool.torchlint]\nselect = ["TL901"]\nignore = ["TL90"]\n')
    write("t.py", BOTH)
    assert findings(run_cli("t.py")) == [("t.py", "TL901")]


def test_extend_select_and_command_line_ignore(run_cli):
    write("pyproject.toml", '[tool.torchlint]\nselect = ["TL900"]\nextend-select = ["TL901"]\n')
    write("t.py", BOTH)
    assert findings(run_cli("t.py")) == [("t.py", "TL900"), ("t.py", "TL901")]
    assert findings(run_cli("--ignore", "TL900", "t.py")) == [("t.py", "TL901")]


@pytest.mark.parametrize(
    ("config", "options", "expected"),
    [
        # A command-line --select replaces the whole configured selection, ignores included.
        ('ignore = ["TL900"]', ["--select", "TL900"], ["TL900"]),
        ('select = ["TL901"]\nextend-select = ["TL900"]', ["--select", "TL901"], ["TL901"]),
        # Without --select, the command line changes only the codes it names, whatever the
        # specificity of the configured prefixes.
        ('select = ["TL900"]', ["--ignore", "TL9"], []),
        ('ignore = ["TL900"]', ["--extend-select", "TL900"], ["TL900", "TL901"]),
        ('ignore = ["TL9"]', ["--extend-select", "TL901"], ["TL901"]),
        # ALL is as broad as TL: on a tie, ignore wins.
        ("", ["--select", "ALL", "--ignore", "TL"], []),
    ],
)
def test_command_line_selection_is_a_layer_over_the_configuration(run_cli, config, options, expected):
    write("pyproject.toml", f"[tool.torchlint]\n{config}\n")
    write("t.py", BOTH)
    assert [code for _, code in findings(run_cli(*options, "t.py"))] == expected


def test_per_file_ignores(run_cli):
    write(
        "pyproject.toml",
        '[tool.torchlint.per-file-ignores]\n"tests/**" = ["TL900"]\n"scratch.py" = ["TL9"]\n',
    )
    write("tests/unit/test_a.py", BOTH)
    write("scratch.py", BOTH)
    write("src/scratch.py", BOTH)  # a pattern without a slash matches the name at any depth
    write("train.py", BOTH)
    assert findings(run_cli(".")) == [
        ("tests/unit/test_a.py", "TL901"),
        ("train.py", "TL900"),
        ("train.py", "TL901"),
    ]


def test_per_file_ignores_are_relative_to_the_configuration(run_cli):
    write("project/pyproject.toml", '[tool.torchlint.per-file-ignores]\n"gen/*.py" = ["TL900"]\n')
    write("project/gen/made.py", "probe()\n")
    write("project/src/gen/kept.py", "probe()\n")
    # Run from outside the project: patterns still count from the configuration's folder.
    assert findings(run_cli("project")) == [("project/src/gen/kept.py", "TL900")]


def test_extend_exclude_adds_to_the_default_excludes(run_cli):
    write("pyproject.toml", '[tool.torchlint]\nextend-exclude = ["generated", "*_pb2.py"]\n')
    write("generated/a.py", "probe()\n")
    write("api_pb2.py", "probe()\n")
    write("build/b.py", "probe()\n")  # a default exclude
    write("kept.py", "probe()\n")
    assert findings(run_cli(".")) == [("kept.py", "TL900")]


def test_exclude_replaces_the_default_excludes(run_cli):
    write("pyproject.toml", '[tool.torchlint]\nexclude = ["legacy"]\n')
    write("legacy/a.py", "probe()\n")
    write("build/b.py", "probe()\n")  # no longer excluded
    assert findings(run_cli(".")) == [("build/b.py", "TL900")]


def test_rule_options_reach_the_rule(run_cli):
    write("pyproject.toml", '[tool.torchlint.probe]\nnames = ["launch", "probe"]\n')
    write("t.py", "launch()\nprobe()\nother()\n")
    result = run_cli("--select", "TL900", "t.py")
    assert [line.split(": ", 1)[1] for line in result.stdout.splitlines()] == [
        "TL900 [*] call of launch(): replace it with checked()",
        "TL900 [*] call of probe(): replace it with checked()",
    ]


def test_rule_defaults_apply_where_nothing_is_configured():
    settings = load_config_file(write("pyproject.toml", '[tool.torchlint]\nselect = ["TL900"]\n'))
    from rule_doubles import OtherRule
    from probe_rule import ProbeRule

    assert settings.options_for(ProbeRule) == {"names": ["probe"]}
    assert settings.options_for(OtherRule) == {"names": ["other"]}


@pytest.mark.usefixtures("script")
@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ('selct = ["TL900"]', "invalid configuration: unknown key 'selct' (did you mean 'select'?)"),
        ("color = true\nsize = 3", "invalid configuration: unknown keys 'color', 'size'"),
        ('select = "TL900"', "invalid configuration at select: 'TL900' is not of type 'array'"),
        ("ignore = [900]", "invalid configuration at ignore.0: 900 is not of type 'string'"),
        ('per-file-ignores = ["a.py"]', "invalid configuration at per-file-ignores: ['a.py'] is not of type 'object'"),
        ('per-file-ignores = {"a.py" = "TL900"}', "at per-file-ignores.a.py: 'TL900' is not of type 'array'"),
        ("exclude = 1", "invalid configuration at exclude: 1 is not of type 'array'"),
        ("extend-exclude = [true]", "at extend-exclude.0: True is not of type 'string'"),
        ('extend-select = ["TL9000"]', "unknown rule code or prefix: 'TL9000'"),
        ('per-file-ignores = {"a.py" = ["XX1"]}', "unknown rule code or prefix: 'XX1'"),
        ("[tool.torchlint.probe]\nnames = 'probe'", "invalid configuration at probe.names: 'probe' is not of type 'array'"),
        ("[tool.torchlint.probe]\nnmes = ['probe']", "invalid configuration at probe: unknown key 'nmes' (did you mean 'names'?)"),
        ("[tool.torchlint.lr]\nadam = 1", "invalid configuration: unknown key 'lr'"),
        ("select = [", "invalid TOML"),
    ],
)
def test_invalid_configuration_is_exit_2_with_a_clear_message(run_cli, toml, message):
    write("pyproject.toml", "[tool.torchlint]\n" + toml + "\n")
    error = refusal(run_cli("t.py"))
    assert error.startswith(f"Error: {Path('pyproject.toml').resolve()}: ")
    assert message in error


def refusal(result) -> str:
    """The message of a run refused for its configuration: exit 2 and nothing checked."""
    assert result.exit_code == 2
    assert result.stdout == ""
    return result.stderr


@pytest.fixture
def script(in_tmp):
    # Depends on in_tmp explicitly: a test's own usefixtures mark runs before the module's.
    write("t.py", "probe()\n")


@pytest.mark.usefixtures("script")
def test_tool_torchlint_must_be_a_table(run_cli):
    write("pyproject.toml", 'tool = {torchlint = "yes"}\n')
    assert "tool.torchlint must be a table" in refusal(run_cli("t.py"))


@pytest.mark.usefixtures("script")
def test_an_invalid_configuration_below_the_start_folder_is_found_too(run_cli):
    write("sub/torchlint.toml", "select = 1\n")
    write("sub/t.py", "probe()\n")
    error = refusal(run_cli("."))
    assert f"{Path('sub/torchlint.toml').resolve()}: invalid configuration at select" in error


@pytest.mark.usefixtures("script")
def test_a_missing_config_file_is_exit_2(run_cli):
    assert "cannot read nowhere.toml: No such file or directory" in refusal(run_cli("--config", "nowhere.toml", "t.py"))


def test_resolver_caches_one_settings_object_per_configuration(tmp_path):
    write("pyproject.toml", '[tool.torchlint]\nselect = ["TL900"]\n')
    write("a/b/c.py", "")
    write("a/d.py", "")
    resolver = ConfigResolver()
    first = resolver.for_path(Path("a/b/c.py"))
    assert first is resolver.for_path(Path("a/d.py"))
    assert first.root == tmp_path.resolve()
    assert first.select == ("TL900",)


def test_without_any_configuration_everything_is_selected(tmp_path):
    resolver = ConfigResolver()
    settings = resolver.for_path(Path("t.py"))
    assert settings.enabled_codes == {"TL900", "TL901"}
    assert settings.root == Path(os.getcwd()).resolve()


def test_settings_reject_unknown_codes_early():
    with pytest.raises(ConfigError, match="unknown rule code or prefix: 'TL7'"):
        Settings().with_overrides(select=["TL7"])
