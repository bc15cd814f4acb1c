"""The word lists, tag sets and word-ending patterns the near-miss rules read, grouped by the category that uses them.

Changing a list changes which edits the rules make; each list's comment says what it is for."""

from __future__ import annotations

import re

# --- shared ------------------------------------------------------------------------------------------------------

# dependency labels of the words that may stand before a noun inside its phrase
PRE_MODIFIERS = {"det", "amod", "compound", "nummod", "poss", "advmod", "npadvmod", "quantmod", "punct"}
# the determiners a movable noun phrase may have (not "no", "each", "any", ...)
PLAIN_DETERMINERS = {"the", "a", "an", "this", "that", "these", "those"}
# nouns of time: not a place for over/under, not a compared group ("during the period")
TIME_WORDS = set(
    "time period year years decade century month week day hour minute second course duration lifetime era age "
    "follow-up night morning evening season".split()
)

# --- negation ----------------------------------------------------------------------------------------------------

NEGATORS = {"no", "not", "n't", "never", "none", "nothing", "nobody", "neither", "nor", "without", "cannot"}
CONTRACTED = {"ca": "can", "wo": "will", "sha": "shall"}  # "can't" is tokenised "ca" + "n't"
DO_FORMS = {"VBZ": "does", "VBD": "did", "VBP": "do"}
# adverbs that stay before an inserted "does not" ("also did not reduce"); others follow it ("did not markedly reduce")
SENTENCE_ADVERBS = set(
    "also thus therefore then further furthermore however still hence consequently additionally moreover now often "
    "usually generally typically frequently always sometimes indeed finally subsequently previously recently first "
    "later so yet nonetheless nevertheless".split()
)

# --- binding: adjective swaps ------------------------------------------------------------------------------------

SWAP_STOP_ADJECTIVES = set(
    "other such same different many several various own certain further additional more most few main first last "
    "next previous total whole overall only possible respective inside outside much little non vivo vitro situ "
    "silico second third fourth fifth sixth seventh eighth ninth tenth present fat latter former free "
    # likeness and place relative to something else, not traits ("teflon and similar polymers", "the outer skin")
    "similar equal identical near general outer inner".split()
)
# noun modifiers that work like adjectives ("a brick building", "a wood fence")
MATERIALS = set(
    "wood metal glass stone brick plastic leather steel paper concrete marble wicker silver gold ceramic cotton wool "
    "denim rubber iron tile straw bamboo cardboard porcelain granite aluminum copper brass clay fabric cloth lace "
    "velvet silk canvas tin cement".split()
)
# nouns whose adjective is part of a quantity or time idiom: "the vast majority", "in large part", "near future"
QUANTITIES = set(
    "majority minority number amount range variety proportion fraction percentage deal lot part extent degree "
    "future past term run measure year years decade decades scale piece".split()
)
FINITE_TAGS = {"VBZ", "VBD", "VBP", "MD"}
COLOURS = set("red orange yellow green blue purple pink brown black white grey gray silver golden".split())
RELATIONAL_WITH_ANTONYMS = set(  # WordNet gives these antonyms, but in abstracts they mostly name kinds, not traits
    "specific multiple significant prospective retrospective soluble insoluble western eastern controversial "
    "mechanical clinical physical chemical biological natural artificial public private internal external "
    "primary secondary direct indirect active inactive positive negative".split()
)
ADJECTIVE_ENDING = re.compile(r"(al|ic|ous|ive|ary|ory|able|ible|ant|ent|ful|less|ar|ile|oid|ed|ish|like)$")
# adjectives of amount or degree, by the end of their scale they name: two from the same end say nearly the same
# of any noun ("high burden" / "severe burden", "slow growth" / "low growth"), so swapping them moves nothing
SCALE_HIGH = set(
    "high large great big substantial considerable significant strong severe serious elevated increased dense heavy "
    "major extensive marked profound intense intensive abundant rapid fast good excellent prominent pronounced wide "
    "broad deep long frequent robust sharp sufficient adequate accurate".split()
)
SCALE_LOW = set(
    "low small little weak mild slight minor light reduced decreased slow poor limited modest sparse minimal short "
    "narrow shallow rare infrequent incomplete insufficient inadequate".split()
)

# --- binding: role swaps -----------------------------------------------------------------------------------------

# verbs whose object completes the predicate ("play a role", "provide insight", "have an effect"): no role to swap
LIGHT_OBJECT_VERBS = set("have play provide take make give pay shed gain exert offer lack hold bear draw".split())
BOUNDARY_POS = {"PUNCT", "ADP", "VERB", "AUX", "ADV", "CCONJ", "SCONJ", "PART"}
SINGULAR_FORMS = {"is", "was", "has", "does"}
PLURAL_FORMS = {"are", "were", "have", "do"}
NOUN_PARTICIPLES = set("based related induced mediated derived associated dependent driven linked".split())

# --- binding: relation arguments ---------------------------------------------------------------------------------

# comparisons whose direction a swap reverses: "higher in women than in men", "reduced in X compared with Y"
DIRECTIONAL = set(
    "increase decrease reduce elevate improve enhance enrich upregulate downregulate raise lower impair suppress "
    "attenuate augment diminish exceed worsen accelerate delay prolong shorten".split()
)
GROUP_PREPOSITIONS = {"in", "among", "for"}
EFFECT_NOUNS = {"effect", "impact", "influence"}
COMPARATORS = {"than", "compared", "versus"}
CONTRASTS = (("but", "not"), ("rather", "than"))
NOMINAL_SUFFIX = re.compile(r"(tion|sion|ment|ance|ence|sis|ing)$")

# --- binding: value swaps ----------------------------------------------------------------------------------------

PERCENT_SIGNS = {"%", "percent"}
INTERVAL_WORDS = {"±", "+/-", "/-", "-", "–", "−", "to", "from", "between", "=", ">", "<", "≥", "≤"}
INTERVAL_LABELS = set("ci cri confidence credible uncertainty ui pi prediction upper lower significance".split())
LIST_WORDS = {",", "and", "or", "%", "percent", "vs", "vs.", "versus"}
DISTRIBUTION_WORDS = set("percentile quartile tertile quintile decile interquartile".split())
SPREAD_LABELS = set("ci cri confidence credible interval iqr range sd se sem".split())

# --- spatial -----------------------------------------------------------------------------------------------------

# adjectives of place after which "right" / "left" names a side ("the right upper lobe", "the left front wheel")
DIRECTION_ADJECTIVES = set(
    "upper lower front back rear hind middle inner outer internal external anterior posterior lateral medial "
    "superior inferior frontal dorsal ventral proximal distal".split()
)
# nouns that "right" names a side of without being physical things ("a right turn"; physical ones are read in WordNet)
SIDE_NOUNS = {"side", "turn", "margin", "column", "half", "lane", "wing", "bank", "corner", "edge"}
# "right" in a fixed term of geometry or astronomy, not a side ("a right angle", "right ascension")
RIGHT_TERMS = {"angle", "angles", "angled", "triangle", "triangles", "ascension", "circular"}
# "under" these is "subjected to" them, not beneath them ("a plate under a uniform load", "under axial compression");
# a force before another noun too ("under force systems"), not any modifier ("under the test bench" is a place)
UNDER_FORCES = set(
    "load loading pressure stress strain tension compression torsion bending shear force impact heating cooling".split()
)
UNDER_CONDITIONS = UNDER_FORCES | set(
    "vacuum condition assumption influence action control consideration investigation study test review "
    "development construction treatment observation way attack excitation irradiation field system".split()
)
# verbs that place a thing "over" or "under" another ("hangs over the bed", "stored under the floor"), beside the motion
# verbs; "over" and "under" elsewhere in abstracts mostly mean across, past or subjected to ("pressures over the
# surface", "a shell under force systems")
POSITION_VERBS = set(
    "hang hover lie sit stand place put lay hold mount suspend position locate set rest float lean install fix attach "
    "store keep hide bury stretch spread".split()
)
# verbs of a change in amount: "drops below 3 cm" flipped to "drops above 3 cm" says nothing coherent
CHANGE_VERBS = set("decrease drop fall increase rise reduce raise lower climb grow".split())
# "after" these means "for" or "in honour of", not later ("searching after", "named after")
AFTER_VERBS = set("search seek look inquire name".split())
# what lies "over" a surface as flow or spread lies along or across it ("flow over a flat plate", "the distribution
# of flares over the sun"): flipping it to "under" states no other arrangement
OVER_ALONG = set(
    "flow layer stream distribution distribute spread average integrate integral sum vary variation range extend "
    "scatter pass passage sweep load loading".split()
)
# units of height or depth: "above 200 km" places a thing, where "above 200 mg/kg" compares values
LENGTHS = set("m metre metres meter meters km kilometre kilometres ft foot feet mile miles".split())
# words whose "to" is fixed, not a direction ("current parallel to a field", "normal to the wall")
FIXED_TO = set(
    "parallel perpendicular normal tangent tangential orthogonal transverse close next relative according due "
    "similar equal equivalent identical proportional opposite adjacent prior subject contrary".split()
)
FLIPS = {
    "left": ("right", "spatial/left-right"),
    "right": ("left", "spatial/left-right"),
    "above": ("below", "spatial/above-below"),
    "below": ("above", "spatial/above-below"),
    "over": ("under", "spatial/over-under"),
    "under": ("over", "spatial/over-under"),
    "inside": ("outside", "spatial/inside-outside"),
    "outside": ("inside", "spatial/inside-outside"),
    "before": ("after", "spatial/before-after"),
    "after": ("before", "spatial/before-after"),
    "upstream": ("downstream", "spatial/upstream-downstream"),
    "downstream": ("upstream", "spatial/upstream-downstream"),
    "to": ("from", "spatial/to-from"),
    "from": ("to", "spatial/to-from"),
}
MOTION_VERBS = set(  # verbs whose "to"/"from" is a direction (not "point to", "bring to light", "lead to")
    "go move travel walk run fly drive ride swim sail migrate send carry transport transfer deliver ship jump climb "
    "fall roll commute flee escape relocate emigrate immigrate crawl march hike rush hurry race stroll wander drift "
    "float translocate shuttle export import spread shift".split()
)

# --- paraphrase --------------------------------------------------------------------------------------------------

LIGHT_VERBS = {"be", "have", "do", "get", "make", "take", "go", "give", "let", "put", "set", "come", "say"}
WN_POS = {"NOUN": "n", "VERB": "v", "ADJ": "a"}
# synonyms are swapped for adjectives only: on a read sample of scientific sentences, verb and noun synonyms took
# the wrong sense too often ("detected" -> "noticed", "excluded" -> "omitted", "cluster" -> "clump")
SYNONYM_POS = ("ADJ",)
# words whose everyday first WordNet sense is not their scientific one ("significant" -> "important",
# "results" -> "effects", "differentiate" -> "distinguish", "study" -> "survey", "culture" -> "civilization"), and
# judging words whose WordNet synonym says more or else ("remarkable" -> "singular", "striking" -> "spectacular")
TECHNICAL = set(
    "mixed extended prolonged endless sundry financial remarkable striking reasonable prominent spiritual "
    "significant result study differentiate express expression culture model control trial subject case rate level "
    "activity response effect analysis treatment condition factor group cell power mean normal positive negative "
    "sensitive resistant association interaction signal sign mark marker development report stress state order "
    "function class family field figure sample site table system set line tissue strain host vector scale range "
    "transform translate transcribe operate execute deliver charge refer dose cross mass volume matter "
    "material body depression relative fit design record score bind binding target agent red white require apparent "
    "mediate product inhibit small large little examination central engagement repeat poor process activate "
    "lineage diagnosis elicit derive uptake minimal confirm inherent".split()
)
MIN_COUNT = 3  # sense-tagged occurrences a synonym needs in WordNet
MIN_WORD_COUNT = 5  # and the word itself, for WordNet's sense order to be trusted
CORRELATIVES = {"both", "either", "neither", "between"}  # "both A and B": the pair is fixed in place

# adverbs after which the affirmative does not contradict the negation ("sometimes fails" / "sometimes succeeds")
HEDGES = set("sometimes often usually occasionally frequently generally commonly typically mostly partly".split())
# negative-polarity words after the predicate: "did not show any effect" has no affirmative "showed any effect"
POLARITY = re.compile(r"\b(any|anything|anyone|anybody|anywhere|either|yet|ever|at all)\b", re.I)
# adverbs that already negate in part: "does not barely move" is a double negation
NEGATIVE_ADVERBS = set("hardly barely scarcely rarely seldom".split())
# adverbs of frequency or degree before which an inserted "not" does not contradict ("often play" / "often do not
# play"); "usually", "generally", "typically" stay out of it: "usually recover" / "usually do not recover" contradict
# (HEDGES above is broader on purpose: a same-meaning pair must hold in every reading, an inserted "not" in one)
PARTIAL_ADVERBS = set("sometimes often occasionally frequently commonly partly".split())
# a subject's quantifiers for which an inserted "not" does not contradict ("some patients (did not) relapse")
PARTIAL_QUANTIFIERS = set("some many several few most various certain".split())
# universal quantifiers after a predicate: "not available for all patients" (not for every one) is not
# "unavailable for all patients"
UNIVERSAL = re.compile(r"(?<!after )\b(all|every|each|both)\b", re.I)  # not the idiom "after all"
