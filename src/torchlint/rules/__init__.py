"""One module per rule; each exposes ``RULE``, its Rule subclass. See registry.RULE_MODULES."""
