"""What torchlint knows about the torch ecosystem, kept as data apart from the reasoning.

Each module is a set of tables keyed by qualified name (`torch.utils.data.DataLoader`) or by
method name (`to`, `set_epoch`): which calls make a device, a module, a tensor, a loader or a
sampler; which methods move a value; which libraries take over placement and sampling. The model
(`torchlint.model.values`) reads these tables; rules never hard-code an API name.
"""
