"""`torchlint lsp`: the language server for editors (needs the `lsp` extra, pygls).

server.py wires the protocol; the other modules are plain functions over engine values, so the
engine stays the only thing that checks code.
"""
