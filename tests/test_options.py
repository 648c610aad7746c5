"""Command-line options are checked as they are parsed: a usage error, a
size or a duration no run can use, an option that would be silently
ignored, each is one line on stderr and exit 2, before anything runs."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_inputs import answered_or_refused

from cli import main
from specs.kafka_elr import load

SMALL = ("--set", "max_records=1", "--set", "max_fences=0", "-q")


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), prog_name="modelcheck")


def refused(r, line: str) -> None:
    """Exit 2, nothing on stdout, exactly `line` on stderr."""
    assert (r.exit_code, r.stdout) == (2, ""), (r.exit_code, r.output, r.exception)
    assert r.stderr == line + "\n"


@pytest.mark.parametrize(
    "args, line",
    [
        (["check", "--bogus"], "error: No such option '--bogus' (see 'modelcheck check --help')"),
        (["bogus"], "error: No such command 'bogus' (see 'modelcheck --help')"),
        (["--bogus"], "error: No such option '--bogus' (see 'modelcheck --help')"),
        (["trace", "show"], "error: Missing argument 'TRACE' (see 'modelcheck trace show --help')"),
        (
            ["simulate", "--walks", "0"],
            "error: Invalid value for '--walks': 0 is not in the range x>=1 (see 'modelcheck simulate --help')",
        ),
    ],
)
def test_a_usage_error_is_one_line(args, line):
    refused(invoke(*args), line)


def test_a_bare_group_still_shows_its_help():
    r = invoke("trace")
    assert r.exit_code == 2 and r.stderr.startswith("Usage: modelcheck trace [OPTIONS] COMMAND")


def test_a_usage_error_is_one_line_on_a_click_without_no_args_is_help_error(monkeypatch):
    """pyproject allows click 8.1, which has no NoArgsIsHelpError: the first
    usage error was an AttributeError's traceback there."""
    import click

    monkeypatch.delattr(click.exceptions, "NoArgsIsHelpError", raising=False)
    r = invoke("check", "--no-such-option")
    assert (r.exit_code, r.stdout) == (2, "")
    assert r.stderr == "error: No such option '--no-such-option' (see 'modelcheck check --help')\n"


@pytest.mark.parametrize("command", [["check"], ["matrix"], ["gate", "g.toml"]])
@pytest.mark.parametrize("size", ["nan", "inf", "0.0001K", "", "0.5", "9" * 400, "1e3"])
def test_a_max_memory_no_run_can_use_is_refused(command, size):
    """'' was taken for "not given" (the default limit), 0.0001K for a limit
    of 0 bytes (a check stopped at once), 400 digits overflowed."""
    refused(
        invoke(*command, "--max-memory", size),
        f"error: --max-memory {size!r}: expected a size such as 512M, 8G or 1.5GiB "
        f"(see 'modelcheck {command[0]} --help')",
    )


@pytest.mark.parametrize("seconds", ["nan", "inf"])
def test_checkpoint_every_is_a_finite_number_of_seconds(tmp_path, seconds):
    refused(
        invoke("check", "--checkpoint", str(tmp_path / "ck"), "--checkpoint-every", seconds),
        f"error: Invalid value for '--checkpoint-every': {seconds!r} is not a finite number of seconds "
        "(see 'modelcheck check --help')",
    )
    assert not (tmp_path / "ck").exists()


def test_checkpoint_every_without_a_checkpoint_is_refused():
    """It was ignored: a run that would never have saved anything."""
    refused(
        invoke("check", *SMALL, "--checkpoint-every", "5"),
        "error: --checkpoint-every applies with --checkpoint DIR (or --resume DIR): give the directory to save in",
    )


def test_an_action_weighted_twice_is_refused():
    refused(
        invoke("simulate", *SMALL, "--weight", "Produce=1", "--weight", " Produce=0"),
        "error: --weight ' Produce=0': Produce has a weight already; give each action one",
    )


ACTIONS = list(load({}).actions)
WEIGHT = st.one_of(
    st.text(max_size=12),
    st.builds(
        "{}={}".format,
        st.sampled_from([*ACTIONS, "Nope", ""]),
        st.sampled_from(["1", "0", "-1", "nan", "inf", "1e308", "0.5", "", "x", "1_0", " 2 "]),
    ),
)
# no --walks of 2^64 here: it allocates in proportion to the walks (issue 32, item 3, fixed on its own)
NUMBER = st.sampled_from(["1", "0", "-1", "nan", "", "x", "2", "3", "1.5"])


@settings(max_examples=60, deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    weights=st.lists(WEIGHT, max_size=3),
    walks=NUMBER,
    depth=NUMBER,
    pick=st.sampled_from(["swarm", "action", "instance", "none", ""]),
)
def test_fuzz_simulate_options(weights, walks, depth, pick):
    """Whatever its options, simulate runs (exit 0 or 1) or refuses them
    with one line (exit 2), never a traceback."""
    args = [a for w in weights for a in ("--weight", w)]
    answered_or_refused(
        invoke("simulate", *SMALL, "--walks", walks, "--depth", depth, "--pick", pick, "--seed", "1", *args)
    )


def test_checks_engine_flags_are_the_options_own_declarations():
    """check's flags for its CheckOptions are built from the fields' `flag`
    declarations: each declared flag is an option of check, with its help
    and (for a count) its range, and a field given a flag is a new option."""
    import dataclasses

    import click

    from modelcheck.cli.flags import check_options
    from modelcheck.engine.options import CheckOptions, flag, flags_of

    params = {p.opts[0]: p for p in main.commands["check"].params if isinstance(p, click.Option)}
    for f in flags_of():
        assert params[f.name].help == f.help and params[f.name].name == f.dest
    assert isinstance(params["--partitions"].type, click.IntRange) and params["--symmetry"].is_flag
    assert [f.dest for f in flags_of()][:3] == ["engine", "symmetry", "fingerprint_bits"]

    @dataclasses.dataclass(frozen=True)
    class Wider(CheckOptions):
        depth: int = dataclasses.field(default=0, metadata=flag("--max-depth", "Stop at this depth.", kind="count"))

    assert flags_of(Wider)[-1].name == "--max-depth" and flags_of(Wider)[-1].dest == "depth"
    command = check_options()(lambda **kw: kw)
    assert [p.opts[0] for p in command.__click_params__][::-1] == [f.name for f in flags_of()]
