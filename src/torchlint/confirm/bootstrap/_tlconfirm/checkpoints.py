"""TL014 evidence: the devices the tensors of a checkpoint loaded at a finding's line were saved
from, which is where `torch.load` without `map_location` restores them.

`torch.load` asks `torch.serialization._get_restore_location` for the function that places each
storage (the default one, or simulated CUDA's); the function returned for a load at a finding's
line notes each saved location before placing the storage as it would have been, so a load that
fails on a machine without CUDA is recorded before it raises.
"""

from __future__ import annotations

import os

import torch.serialization

from _tlconfirm import events, sites


class Checkpoints:
    def __init__(self, script: str, lines: frozenset) -> None:
        self.script = os.path.realpath(script)
        self.lines = lines

    def install(self) -> None:
        original = torch.serialization._get_restore_location

        def get_restore_location(map_location):
            restore = original(map_location)
            frames = sites.user_frames(limit=3)
            if not frames or frames[0][1] not in self.lines or os.path.realpath(frames[0][0]) != self.script:
                return restore
            seen: set = set()

            def noting_restore(storage, location):
                if location not in seen:
                    seen.add(location)
                    events.emit("checkpoint_storage", line=frames[0][1], location=str(location), frames=frames)
                return restore(storage, location)

            return noting_restore

        torch.serialization._get_restore_location = get_restore_location
