"""One module per rule, `<code>_<name>.py`, each exposing ``RULE``, its Rule subclass; rules/catalog.py
lists them and describes each."""
