"""CLI: agreement between two label sources of the store (`agreement`), and the judge audit (`audit ...`).

`python -m assess audit ACTION`: the judge audit's numbers (assess/services/audit/), as the /audit page shows them.
--json prints one JSON object; without it a readable table. Each module owns the parsers of its commands and what
they print: ``agreement`` (agreement, alt-test, retest, overlap), ``probes`` (systems, bias, consistency, persona),
``verdict``, ``estimates`` (estimate, coverage, sample, plan), ``speed`` (speed, rubber-stamp); ``output`` holds
what they share. `audit simulate` lives in assess/cli/simulate.py.
"""

from __future__ import annotations

from assess.cli import add_db_argument
from assess.cli.audit import agreement, estimates, probes, speed, verdict
from assess.cli.simulate import add_command as add_simulate

# The `audit` actions in the order --help lists them.
ACTIONS = (
    agreement.add_matrix,
    probes.add_systems,
    probes.add_bias,
    probes.add_consistency,
    agreement.add_alt_test,
    verdict.add_verdict,
    agreement.add_retest,
    agreement.add_overlap,
    probes.add_persona,
    estimates.add_estimate,
    estimates.add_coverage,
    estimates.add_sample,
    estimates.add_plan,
    add_simulate,
    speed.add_speed,
    speed.add_rubber_stamp,
)


def add_commands(sub) -> None:
    """The top-level `agreement` command (two sources), then the `audit` group."""
    agreement.add_agreement(sub)
    group = sub.add_parser(
        "audit",
        help="the judge audit: several sources, system level, bias, consistency, corrected estimates, samples",
        description="The judge audit (docs/cli.md#the-judge-audit): agreement of several sources with a human "
        "ceiling and breakdowns, system-level agreement, bias and consistency probes, corrected (PPI) "
        "estimates with intervals, coverage of those intervals, budgeted human samples.",
    )
    commands = group.add_subparsers(dest="audit_command", metavar="ACTION")
    commands.required = True

    def command(name: str, help_text: str, func, description: str):
        p = commands.add_parser(name, help=help_text, description=description)
        add_db_argument(p)
        p.add_argument("--json", action="store_true", help="print one JSON object")
        p.set_defaults(func=func)
        return p

    for add in ACTIONS:
        add(command)


__all__ = ["add_commands"]
