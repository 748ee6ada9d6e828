"""``export release``: the release bundle's options on the ``export`` command, and its run (docs/release.md)."""

from __future__ import annotations

import argparse

from assess.cli.common import open_store
from assess.errors import AssessError
from assess.services import release

RELEASE = "release"
# Options of ``export`` that mean nothing for a bundle: refused rather than ignored.
_OTHER_OPTIONS = {"--dedup": "dedup", "--nugget-source": "nugget_source", "--table": "table", "--layout": "layout"}


class Sources(argparse.Action):
    """``--source``: the last one given in ``source`` (every other export kind takes one), all of them in
    ``sources`` (a release bundle takes several)."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)
        namespace.sources = [*(getattr(namespace, "sources", None) or []), values]


def add_options(parser: argparse.ArgumentParser) -> None:
    """The release bundle's own option (``--source`` repeats through :class:`Sources`)."""
    parser.set_defaults(sources=[])
    parser.add_argument(
        "--force",
        action="store_true",
        help="release: write into a non-empty --out folder (the bundle's files replace those of the same name)",
    )


def cmd_release(args) -> int:
    if not args.output:
        raise AssessError("export release needs --out DIR (a new or empty folder)")
    for option, dest in _OTHER_OPTIONS.items():
        if getattr(args, dest, None):
            raise AssessError(f"{option} is not for release exports")
    if args.run or args.measures:
        raise AssessError("--run and --measure are not for release exports")
    with open_store(args) as db:
        counts = release.export_release(db, args.output, sources=args.sources, force=args.force)
    qrels = sum(counts["qrels"].values())
    print(
        f"{args.output}: wrote docs {counts['docs']} ({counts['docs_without_text']} without text), "
        f"queries {counts['queries']}, qrels {qrels} in {len(counts['qrels'])} files, labels {counts['labels']}, "
        f"nuggets {counts['nuggets']}, battles {counts['battles']}, responses {counts['responses']}, "
        f"leaderboards {len(counts['leaderboards'])}"
    )
    return 0
