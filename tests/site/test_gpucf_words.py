"""gpucf prints a submission's state and a season's ranking rule in the site's words (gpucf/render.py
keeps its own copy: the client does not import the site). Every value the API may send has its words
there, the same as the pages' in English."""
from django.utils import translation

from gpucf import render
from submissions.models.seasons import RankingRule
from submissions.selectors import SubmissionState


def test_gpucf_has_the_pages_words_for_every_state_and_rule():
    with translation.override("en"):
        assert render.STATES == {value: str(label) for value, label in SubmissionState.choices}
        assert render.RULES == {value: str(label) for value, label in RankingRule.choices}
