"""The prompt texts are data files (``assess/llm/prompts/texts/``): the library is every file, in a fixed order, the
texts keep what the registry says, and a file that is not one prompt is refused, naming the file and the field."""

from __future__ import annotations

import pytest

from assess.llm import prompts
from assess.tasks import GRADES


def test_the_library_is_every_prompt_file_in_order():
    assert sorted(p.stem for p in prompts.TEXTS.glob("*.toml")) == sorted(prompts.LIBRARY)
    loaded = [p.name for p in (*prompts.PROMPTS.values(), *prompts.VARIANTS.values())]
    assert loaded == list(prompts.LIBRARY)
    assert all(p.system.endswith(f" {prompts.DATA_RULE}") for p in prompts.PROMPTS.values())
    variant, again = prompts.load_prompt(prompts.TEXTS / "ntr-match.toml")
    assert variant is None and again.version == prompts.prompt_for("ntr").version == "ntr-match@7fa7678d"


def test_the_passage_prompts_give_the_registry_grades_in_order():
    for p in (prompts.prompt_for("passage"), prompts.prompt_for("passage", prompts.NO_PTKB)):
        lines = [line for line in p.template.splitlines() if line[:4] in {f"{g} = " for g in GRADES.names}]
        assert [line.split(":")[0] for line in lines] == [f"{g} = {GRADES.names[g].lower()}" for g in (4, 3, 2, 1, 0)]


@pytest.mark.parametrize(
    ("name", "change", "message"),
    [
        (
            "ntr-match",
            lambda t: t.replace('parser = "yes-no"', 'parser = "maybe"'),
            "parser 'maybe' is not one of grade, ",
        ),
        (
            "ntr-match",
            lambda t: t.replace("max_tokens = 10", 'max_tokens = "10"'),
            "max_tokens must be an integer, found '10'",
        ),
        ("ntr-match", lambda t: t.split("template = ")[0], "template must be a string, found None"),
        ("ntr-match", lambda t: t.replace('task = "ntr"', 'task = "ntr"\ntone = "warm"'), "unknown field 'tone'"),
        ("ntr-match", lambda t: t.replace('task = "ntr"', "task = ntr"), r"not a prompt file \(Invalid value"),
        ("other", lambda t: t, "name 'ntr-match' is not the file's name 'other'"),
    ],
)
def test_a_file_that_is_not_one_prompt_is_refused_naming_the_file_and_the_field(tmp_path, name, change, message):
    bad = tmp_path / f"{name}.toml"
    bad.write_text(change((prompts.TEXTS / "ntr-match.toml").read_text(encoding="utf-8")), encoding="utf-8")
    with pytest.raises(ValueError, match=message) as refused:
        prompts.load_prompt(bad)
    assert str(refused.value).startswith(f"{bad}: ")
