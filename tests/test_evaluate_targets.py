"""What an ``expect`` names in a site (pipeline/evaluate/targets.py): documents, sections, overviews."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline.evaluate.targets import Inventory, heading_names, heading_words, section_target

PATHS = ["", "## Install", "## Install > ### On Linux", "## [Configure](http://x.example/c) the `app` { #configure }",
         "## Run it"]


def inventory() -> Inventory:
    inv = Inventory()
    inv.add("guide/setup.md", "guide", "Setup Guide", PATHS, ("Setup Guide",))
    inv.add("notes.md", "", "notes", ["", "## Run it"], ("Overview",))
    return inv


def test_heading_words_ignore_markup_case_links_and_attributes():
    assert heading_words("## [Configure](http://x.example/c) the `app` { #configure }") == ("configure", "the", "app")
    assert heading_words("configure-the-app") == ("configure", "the", "app")  # a slug is the same words
    assert ("configure",) in heading_names("## Setup { #configure }")  # the explicit id too


def test_a_path_alone_is_the_whole_document():
    target = inventory().resolve("guide/setup.md")
    assert target.document_level
    assert all(target.matches("guide/setup.md", h) for h in PATHS)
    assert not target.matches("notes.md", "")


def test_a_heading_is_its_section_with_its_subsections():
    inv = inventory()
    for expect in ["guide/setup.md#Install", "guide/setup.md#install", "./guide/setup.md# INSTALL "]:
        target = inv.resolve(expect)
        assert [h for h in PATHS if target.matches("guide/setup.md", h)] == ["## Install", "## Install > ### On Linux"]


def test_slug_explicit_id_and_heading_path_resolve():
    inv = inventory()
    assert inv.resolve("guide/setup.md#configure-the-app").matches("guide/setup.md", PATHS[3])
    assert inv.resolve("guide/setup.md#configure").matches("guide/setup.md", PATHS[3])
    target = inv.resolve("guide/setup.md#Install > On Linux")
    assert [h for h in PATHS if target.matches("guide/setup.md", h)] == ["## Install > ### On Linux"]


def test_the_title_names_the_overview_only():
    inv = inventory()
    target = inv.resolve("guide/setup.md#Setup Guide")
    assert target.overview and [h for h in PATHS if target.matches("guide/setup.md", h)] == [""]
    # a document without a title: its overview's chunks are titled "Overview"
    assert inv.resolve("notes.md#Overview").overview


@pytest.mark.parametrize("expect, message", [
    ("guide/setup.mdx", "no document 'guide/setup.mdx' in the site; did you mean guide/setup.md?"),
    ("missing.md", "no document 'missing.md' in the site"),
    ("guide/setup.md#Uninstall", "no heading 'Uninstall' in guide/setup.md (its sections: 'Install', 'On Linux'"),
    ("guide/setup.md#?!", "has no words"),
    ("", "non-empty string"),
])
def test_an_expect_pointing_at_nothing_says_why(expect, message):
    with pytest.raises(ValueError, match=None) as error:
        inventory().resolve(expect)
    assert message in str(error.value)


header = st.lists(st.text(st.characters(categories=["L", "N", "Zs"]), min_size=1, max_size=12).filter(lambda t: t.strip()),
                  min_size=0, max_size=3)


@given(header, header)
def test_a_section_target_matches_its_own_section_and_nothing_of_another_document(a, b):
    path_a = " > ".join(f"{'#' * (i + 2)} {h}" for i, h in enumerate(a))
    path_b = " > ".join(f"{'#' * (i + 2)} {h}" for i, h in enumerate(b))
    target = section_target("a.md", path_a)
    assert target.matches("a.md", path_a)
    assert not target.matches("b.md", path_a)
    if path_a and path_b.startswith(path_a + " > "):  # a subsection lies in its section
        assert target.matches("a.md", path_b)
