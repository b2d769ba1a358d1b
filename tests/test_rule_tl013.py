"""TL013 sampler-with-shuffle: a truthy shuffle together with a sampler that may be given."""

import textwrap

from conftest import lint

from torchlint.config import Settings
from torchlint.fixes import loop


def findings(source):
    return [d for d in lint(source) if d.code == "TL013"]


def test_sampler_built_in_the_distributed_branch_is_reported_at_the_shuffle_argument():
    (found,) = findings(
        """
        import os
        from torch.utils.data import DataLoader, DistributedSampler

        def loader(ds):
            sampler = DistributedSampler(ds) if "WORLD_SIZE" in os.environ else None
            return DataLoader(ds, batch_size=8, shuffle=True, sampler=sampler)
        """
    )
    assert (found.line, found.column) == (7, 49)
    assert "which is not None on some paths" in found.message
    assert "in the distributed run" in found.message
    assert "pass shuffle=(sampler is None)" in found.message


def test_positional_and_inline_samplers_and_batch_samplers():
    found = findings(
        """
        from torch.utils.data import BatchSampler, DataLoader, RandomSampler

        def loaders(ds):
            a = DataLoader(ds, 4, True, RandomSampler(ds))
            b = DataLoader(ds, shuffle=True, batch_sampler=BatchSampler(RandomSampler(ds), 4, False))
            return a, b
        """
    )
    assert [d.line for d in found] == [5, 6]
    assert "drop shuffle=True" in found[0].message
    assert "batch_sampler=" in found[1].message


def test_a_flag_next_to_a_sampler_given_on_every_path():
    found = findings(
        """
        from torch.utils.data import DataLoader, RandomSampler

        def make(ds, train):
            return DataLoader(ds, shuffle=train, sampler=RandomSampler(ds))
        """
    )
    assert [d.line for d in found] == [5]


def test_constant_flags_and_the_values_callers_pass():
    found = findings(
        """
        import argparse
        from torch.utils.data import DataLoader, DistributedSampler

        parser = argparse.ArgumentParser()
        parser.add_argument("--shuffle", action="store_true", default=True)
        parser.add_argument("--distributed", action="store_true")
        args = parser.parse_args()

        def make(ds, shuffle, distributed):
            sampler = DistributedSampler(ds) if distributed else None
            return DataLoader(ds, shuffle=shuffle, sampler=sampler)

        train = make(list(range(8)), True, args.distributed)
        sampler = DistributedSampler(range(8)) if args.distributed else None
        other = DataLoader(range(8), shuffle=args.shuffle, sampler=sampler)
        """
    )
    assert [d.line for d in found] == [12, 16]
    assert "pass shuffle=(args.shuffle and sampler is None)" in found[1].message


def test_guards_and_absent_samplers_are_silent():
    assert not findings(
        """
        from torch.utils.data import DataLoader, DistributedSampler

        def loaders(ds, distributed, shuffle, helper_sampler):
            sampler = DistributedSampler(ds) if distributed else None
            a = DataLoader(ds, shuffle=(sampler is None), sampler=sampler)
            use_shuffle = shuffle and sampler is None
            b = DataLoader(ds, shuffle=use_shuffle, sampler=sampler)
            c = DataLoader(ds, shuffle=False, sampler=sampler)
            d = DataLoader(ds, shuffle=True, sampler=None)
            e = DataLoader(ds, shuffle=True, sampler=helper_sampler)
            f = DataLoader(ds, shuffle=not distributed, sampler=sampler)
            return a, b, c, d, e, f
        """
    )


def test_a_flag_negating_the_setting_that_builds_the_sampler_is_a_guard():
    # DDP = False makes `not DDP` true as a constant; the sampler exists only where DDP is true.
    found = findings(
        """
        from torch.utils.data import DataLoader, DistributedSampler

        DDP = False

        def loaders(ds):
            sampler = DistributedSampler(ds) if DDP else None
            a = DataLoader(ds, shuffle=not DDP, sampler=sampler)
            if DDP:
                other = DistributedSampler(ds)
            else:
                other = None
            b = DataLoader(ds, shuffle=(not DDP), sampler=other)
            c = DataLoader(ds, shuffle=not DDP, sampler=DistributedSampler(ds))
            return a, b, c
        """
    )
    assert [d.line for d in found] == [14]


def test_calls_pairing_flag_and_sampler_are_not_mixed_up():
    assert not findings(
        """
        from torch.utils.data import DataLoader, RandomSampler

        def make(ds, shuffle, sampler=None):
            return DataLoader(ds, shuffle=shuffle, sampler=sampler)

        train = make(range(8), True)
        val = make(range(8), False, RandomSampler(range(8)))
        """
    )


def test_fix_guards_a_literal_true_with_the_named_sampler():
    source = textwrap.dedent(
        """
        import os
        from torch.utils.data import DataLoader, DistributedSampler

        ds = list(range(10))
        sampler = DistributedSampler(ds) if os.environ.get("RANK") else None
        loader = DataLoader(ds, shuffle=True, sampler=sampler)
        """
    )
    result = loop.fix_bytes(source.encode(), "train.py", Settings(), False)
    assert "loader = DataLoader(ds, shuffle=(sampler is None), sampler=sampler)\n" in result.fixed_text
    assert not findings(result.fixed_text)


def test_a_flag_that_reads_itself_in_a_loop_is_no_setting_and_no_crash():
    # `flip = not flip` reaches itself round the loop: the flag is not followed forever
    diagnostics = lint(
        textwrap.dedent(
            """
            from torch.utils.data import DataLoader, DistributedSampler

            def main(ds):
                for epoch in range(3):
                    flip = not flip
                    sampler = DistributedSampler(ds) if flip else None
                    loader = DataLoader(ds, shuffle=flip, sampler=sampler)
            """
        )
    )
    assert not [d for d in diagnostics if d.code == "TL000"]
