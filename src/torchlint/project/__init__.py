"""Project-wide analysis: a file's calls into the other modules of its own project.

- `layout`: the project root and the folders absolute imports are looked up in;
- `syspath`: folders a file adds to `sys.path` itself, when spelt out literally;
- `imports`: which module file an import names;
- `summary`: what a module's functions and classes do to their arguments, as plain data;
- `summarize`: that summary, read off the module's semantic model;
- `index`: summaries shared by every file a process checks, and each file's view of them.
"""
