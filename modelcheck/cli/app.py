"""The `modelcheck` group: what every command's exit status means, the
one-line bad input, and the protocol the commands check (registered by
the top-level cli.py; modelcheck/protocol.py)."""

from __future__ import annotations

import errno
import os
import signal
import sys
import textwrap
import traceback
from typing import Any, NoReturn

import click

from .. import __version__
from ..lifetime import Stopped, exit_code
from ..protocol import Protocol, registered
from ..runs.exits import EXIT_BAD_INPUT, EXIT_INTERNAL, BadInput


def protocol() -> Protocol:
    """The protocol cli.py registered."""
    return registered()


class ProtocolHelp(click.Command):
    """A command whose help names the protocol's config keys and variants
    ({config_keys}, {variants} in its text) as its registration declares
    them, so that the help never lags the schema."""

    def format_help_text(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        p = protocol()
        keys, variants = (
            textwrap.fill(", ".join(names), 72, subsequent_indent="    ", break_on_hyphens=False)
            for names in (p.config_keys, p.variants)
        )
        text, self.help = self.help, (self.help or "").format(config_keys=keys, variants=variants)
        try:
            super().format_help_text(ctx, formatter)
        finally:
            self.help = text


class Commands(click.Group):
    """Every command's exit status means what it says: Ctrl-C outside a
    check's own handling is 130 (not click's "Aborted!", exit 1, which
    reads as "violated"); a resource the machine ran out of is one line,
    exit 2; anything else unexpected is a traceback and exit 3, never a
    verdict."""

    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        try:
            return super().make_context(*args, **kwargs)
        except click.UsageError as e:
            usage_error(e)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            status = super().invoke(ctx)
        except click.UsageError as e:
            usage_error(e)
        except KeyboardInterrupt:
            sys.exit(128 + signal.SIGINT)
        except BrokenPipeError:  # the reader went away (`| head`): as a Unix tool killed by SIGPIPE, quietly
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(128 + signal.SIGPIPE)
        except Stopped as e:  # a stop no command reported: said, never a traceback
            click.echo(f"modelcheck {e}", err=True)
            sys.exit(exit_code(e))
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except (MemoryError, OSError) as e:
            bad_input(resource_error(e) or internal_error())
        except BadInput as e:
            bad_input(str(e))
        except Exception:
            internal_error()
        sys.exit(status or 0)  # each run returns its exit status


def bad_input(message: str) -> NoReturn:
    """Bad input: one line on stderr, exit 2, nothing else written."""
    click.echo(f"error: {message}", err=True)
    sys.exit(EXIT_BAD_INPUT)


def usage_error(e: click.UsageError) -> NoReturn:
    """A usage error is one line, as bad input is (click's shows the usage
    and a hint on four); a command or group called bare shows its help."""
    shows_help = getattr(click.exceptions, "NoArgsIsHelpError", None)  # click 8.2+; 8.1 shows the help itself
    if shows_help is not None and isinstance(e, shows_help):
        raise e
    see = f" (see '{e.ctx.command_path} --help')" if e.ctx else ""
    bad_input(" ".join(e.format_message().split()).removesuffix(".") + see)


def resource_error(e: BaseException) -> str | None:
    """One line for a resource the machine ran out of (not a bug), or None."""
    if isinstance(e, MemoryError):
        return (
            "out of memory: the machine had less free memory than this run needed (a check's "
            "--max-memory below what is free makes the fast engine spill to disk instead)"
        )
    if isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT, errno.ENOMEM, errno.EFBIG):
        where = f" writing {e.filename}" if e.filename else ""
        return f"{e.strerror}{where} (a checkpoint, or levels spilled to disk under --max-memory)"
    return None


def internal_error() -> NoReturn:
    """Never exit 1 ("violated") without a verdict: a traceback, exit 3."""
    traceback.print_exc()
    click.echo("error: internal error, no verdict (the traceback above is a bug to report)", err=True)
    sys.exit(EXIT_INTERNAL)


@click.group(cls=Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="modelcheck")
def main() -> None:
    """Explicit-state model checker for Kafka's replication protocol
    (KIP-966 Eligible Leader Replicas, KIP-704, KIP-460).

    \b
    modelcheck check                      exhaustive check of the default config
    modelcheck check --set variant=legacy the pre-KIP-966 protocol (a counterexample)
    modelcheck replay specs/scenarios/kip966-elr-example.toml
    """
