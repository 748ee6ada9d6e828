"""`agreement` and the `audit` group (being split by concern: every command still comes from ``agreement``)."""

from assess.cli.audit.agreement import add_commands

__all__ = ["add_commands"]
