"""`torchlint confirm`: run the script briefly under instrumentation and confirm each static finding.

The parent side (this package) never imports torch: it checks the script with the engine, starts
the script with the user's interpreter and the bootstrap on PYTHONPATH (bootstrap/, loaded into
every process of the run), waits under a time limit, ends whatever is left, merges what the
processes recorded and matches it to the findings, rule by rule (evidence/).
"""
