"""`make eval`'s table of the synthetic dice by legibility (models/evaluate.py)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "models"))

from evaluate import NAMED_BY_EYE_FROM, legibility_table  # noqa: E402

from vision.evaluation import EvalResult, ImageScore  # noqa: E402


def result_of(*dice: tuple[float, bool]) -> EvalResult:
    result = EvalResult()
    result.add(ImageScore(image="x.jpg", labelled=len(dice), legible_right=list(dice)))
    return result


def test_each_kind_is_summed_from_where_a_person_names_most_of_its_dice() -> None:
    pips, animals = NAMED_BY_EYE_FROM["pips"], NAMED_BY_EYE_FROM["animals"]
    assert pips < animals
    table = legibility_table({
        "Synth pips": result_of((pips - 1, False), (pips, True), (animals, False)),
        "Synth animals": result_of((pips, False), (animals - 1, False), (animals, True)),
    }).splitlines()
    assert table[0].split() == ["legibility", "d'", "Synth", "pips", "Synth", "animals"]
    named = next(line for line in table if line.startswith("a person names most "))
    # pips: the dice from 45 on (one right of two); animals: only from 150 on (one of one)
    assert named.split()[-4:] == ["1/2", "(50.00%)", "1/1", "(100.00%)"]
    band = next(line for line in table if line.startswith("30–45"))
    assert band.split()[1:] == ["0/1", "(0.00%)", "-"]
