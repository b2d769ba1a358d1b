"""Calls that only report a value (print it, log it, write it down) and calls that only inspect
it: a value that reaches nothing but these is not used for anything (TL001)."""

from __future__ import annotations

# Calls that end the run (builtins by their own names).
ABORTING_CALLS = frozenset({"sys.exit", "os._exit", "exit", "quit"})

REPORTING_FUNCTIONS = frozenset(
    {
        "print",
        "pprint.pprint",
        "json.dump",
        "json.dumps",
        "yaml.dump",
        "yaml.safe_dump",
        "logging.debug",
        "logging.info",
        "logging.warning",
        "logging.warn",
        "logging.error",
        "logging.exception",
        "logging.critical",
        "logging.log",
        "warnings.warn",
    }
)
# Methods of loggers, progress bars, writers and frameworks that print or record their arguments.
REPORTING_METHODS = frozenset(
    {
        "debug", "info", "warning", "warn", "error", "exception", "critical", "log", "write", "print",
        "set_description", "set_postfix", "set_postfix_str", "add_text", "log_hyperparams", "log_dict",
    }
)
# Builtins that turn a value into text.
FORMATTING_FUNCTIONS = frozenset({"str", "repr", "format"})
# Builtins that look at a value without keeping or using it.
INSPECTING_FUNCTIONS = frozenset({"len", "isinstance", "id", "type", "hasattr", "callable", "bool"})
