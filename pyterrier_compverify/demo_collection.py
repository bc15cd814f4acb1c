"""Small hand-written English collection for the compositional-verification demo.

Each query has one relevant document plus minimal-edit near misses (negation, binding, spatial)
that keep almost every word but are not relevant, alongside unrelated distractor documents.
"""

from __future__ import annotations

DEMO_TOPICS = [
    {"qid": "q1", "query": "dog chasing the cat out of the kitchen"},
    {"qid": "q2", "query": "woman in a red coat holding a blue umbrella"},
    {"qid": "q3", "query": "does getting vaccinated before exposure to the virus prevent infection"},
    {"qid": "q4", "query": "student correcting the professor's mistake during a lecture"},
    {"qid": "q5", "query": "small mirror mounted above the large bathroom sink"},
    {"qid": "q6", "query": "enzyme in saliva that breaks starch down into sugars"},
    {"qid": "q7", "query": "cyclist riding in front of a bus on a narrow road"},
    {"qid": "q8", "query": "cook washed her hands after touching raw chicken"},
    {"qid": "q9", "query": "angry player shoved the referee inside the penalty area"},
    {"qid": "q10", "query": "birds building a nest inside a chimney"},
    {"qid": "q11", "query": "lightning flash arriving before the thunder during a storm"},
    {"qid": "q12", "query": "mother teaching her young daughter to ride a bicycle"},
]

# Per query number: the relevant document, then its near-miss minimal edits keyed by kind.
_DOCS_BY_QUERY = {
    1: {
        "relevant": "Our terrier ran after the cat and drove it from the kitchen into the garden.",
        "negation": "Our terrier did not run after the cat or drive it from the kitchen into the garden.",
        "binding": "The cat ran after our terrier and drove it from the kitchen into the garden.",
        "spatial": "Our terrier ran after the cat and drove it from the garden into the kitchen.",
    },
    2: {
        "relevant": "At the bus stop, a woman in a scarlet jacket was gripping a navy umbrella.",
        "negation": "At the bus stop, a woman in a scarlet jacket was not gripping a navy umbrella.",
        "binding": "At the bus stop, a woman in a navy jacket was gripping a scarlet umbrella.",
    },
    3: {
        "relevant": "Immunization ahead of contact with the pathogen keeps the illness away.",
        "negation": "Immunization ahead of contact with the pathogen does not keep the illness away.",
        "spatial": "Immunization after contact with the pathogen keeps the illness away.",
    },
    4: {
        "relevant": "Halfway through class, an undergraduate flagged an error the lecturer had made.",
        "negation": "Halfway through class, an undergraduate did not flag an error the lecturer had made.",
        "binding": "Halfway through class, the lecturer flagged an error an undergraduate had made.",
    },
    5: {
        "relevant": "In our bathroom a compact oval mirror is fixed over the wide porcelain basin.",
        "negation": "In our bathroom a compact oval mirror is not fixed over the wide porcelain basin.",
        "binding": "In our bathroom a wide oval mirror is fixed over the compact porcelain basin.",
        "spatial": "In our bathroom a compact oval mirror is fixed under the wide porcelain basin.",
    },
    6: {
        "relevant": "Salivary amylase splits starch into simple sugars as food is chewed.",
        "negation": "Salivary amylase does not split starch into simple sugars as food is chewed.",
        "binding": "Salivary amylase splits simple sugars into starch as food is chewed.",
    },
    7: {
        "relevant": "On the single-track lane, a cyclist stayed just ahead of the double-decker bus.",
        "binding": "On the single-track lane, the double-decker bus stayed just ahead of a cyclist.",
        "spatial": "On the single-track lane, a cyclist stayed just behind the double-decker bus.",
    },
    8: {
        "relevant": "The chef scrubbed her hands with soap right after handling the uncooked poultry.",
        "negation": "The chef did not scrub her hands with soap right after handling the uncooked poultry.",
        "spatial": "The chef scrubbed her hands with soap right before handling the uncooked poultry.",
    },
    9: {
        "relevant": "A furious midfielder knocked the official over within the eighteen-yard box.",
        "negation": "A furious midfielder did not knock the official over within the eighteen-yard box.",
        "binding": "The official knocked a furious midfielder over within the eighteen-yard box.",
        "spatial": "A furious midfielder knocked the official over outside the eighteen-yard box.",
    },
    10: {
        "relevant": "A pair of swifts built their nest within the old brick chimney.",
        "negation": "A pair of swifts did not build their nest within the old brick chimney.",
        "spatial": "A pair of swifts built their nest on the outside of the old brick chimney.",
    },
    11: {
        "relevant": "In a thunderstorm the burst of light reaches an observer earlier than the rolling boom.",
        "binding": "In a thunderstorm the rolling boom reaches an observer earlier than the burst of light.",
        "spatial": "In a thunderstorm the burst of light reaches an observer later than the rolling boom.",
    },
    12: {
        "relevant": "A mom showed her little girl how to pedal a bike along the park path.",
        "negation": "A mom never showed her little girl how to pedal a bike along the park path.",
        "binding": "A little girl showed her mom how to pedal a bike along the park path.",
    },
}

_DISTRACTORS = [
    "Sourdough starters need regular feeding with flour and water to stay active and bubbly.",
    "The annual tax return must be filed by the end of April to avoid a late penalty.",
    "Basalt forms when lava rich in iron and magnesium cools quickly at the surface.",
    "The Sicilian Defence is one of the most popular replies to the king's pawn opening in chess.",
    "Bebop emerged in the 1940s, favoring fast tempos and complex harmonic changes.",
    "A garter stitch pattern is made by knitting every row, which gives a ridged texture.",
    "Python lists keep their elements in insertion order and can grow as items are appended.",
    "Spring tides occur when the sun and moon line up, producing unusually high and low tides.",
    "Copper roofs slowly develop a green patina as the metal oxidizes over several decades.",
    "The museum's spring exhibition features woodblock prints from nineteenth-century Japan.",
    "Regular tire rotation helps the tread wear evenly and extends the life of the tires.",
    "Honeybees communicate the location of food sources to their hive mates through a waggle dance.",
]

_SUFFIX = {"relevant": "rel", "negation": "neg", "binding": "bind", "spatial": "spat"}

DEMO_DOCS = [
    {"docno": f"d{qnum}-{_SUFFIX[kind]}", "text": text, "kind": kind}
    for qnum, docs in _DOCS_BY_QUERY.items()
    for kind, text in docs.items()
] + [{"docno": f"x{i}", "text": text, "kind": "distractor"} for i, text in enumerate(_DISTRACTORS, start=1)]

DEMO_QRELS = [
    {"qid": "q" + doc["docno"][1:].split("-")[0], "docno": doc["docno"], "label": 1}
    for doc in DEMO_DOCS
    if doc["kind"] == "relevant"
]
