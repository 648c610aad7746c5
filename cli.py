"""The `modelcheck` command (modelcheck/cli/), checking the protocol of
specs/kafka_elr: the one place the command line names a protocol."""

from __future__ import annotations

from modelcheck.cli import main
from modelcheck.protocol import register
from specs.kafka_elr import PROTOCOL

register(PROTOCOL)

__all__ = ["main"]

if __name__ == "__main__":
    main()
