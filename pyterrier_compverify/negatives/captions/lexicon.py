"""Curated word lists for everyday scenes (people, animals, clothes, vehicles, terrain), written for image captions.

Each list pairs a word with the words it may become: co-hyponyms or antonyms for near-misses, synonyms for
paraphrases. Nouns not listed are classed through WordNet (person, animal, clothing, vehicle).
"""

from __future__ import annotations


def _pairs(text: str, both: bool = True) -> dict[str, list[str]]:
    """``"a:b,c d:e"`` -> {a: [b, c], d: [e]} (and, with ``both``, b -> a, c -> a, e -> d)."""
    out: dict[str, list[str]] = {}
    for item in text.split():
        word, _, targets = item.partition(":")
        for target in targets.split(","):
            target = target.replace("_", " ")
            out.setdefault(word, []).append(target)
            if both:
                out.setdefault(target, []).append(word)
    return {w: list(dict.fromkeys(t)) for w, t in out.items()}


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# --- noun classes --------------------------------------------------------------------------------------------------

ADULTS = _words("man men woman women guy guys lady ladies gentleman gentlemen adult adults person people")
CHILDREN = _words("boy boys girl girls child children kid kids toddler toddlers baby babies infant infants")
MALE = _words(
    "man men boy boys guy guys gentleman gentlemen father dad son sons brother brothers husband boyfriend "
    "policeman fireman cowboy"
)
FEMALE = _words(
    "woman women girl girls lady ladies mother mom daughter daughters sister sisters wife bride girlfriend "
    "policewoman cowgirl"
)
GENDERED_PRONOUNS = _words("he him his himself she her hers herself")
THIRD_SINGULAR_PRONOUNS = GENDERED_PRONOUNS | _words("it its itself")
ANIMALS = _words(
    "dog dogs puppy puppies cat cats kitten kittens horse horses pony ponies cow cows bull bulls sheep goat goats "
    "pig pigs bird birds duck ducks goose geese chicken chickens camel camels donkey donkeys elephant elephants "
    "poodle poodles greyhound greyhounds terrier terriers collie collies beagle beagles dachshund pug bulldog husky "
    "chihuahua dalmatian labrador retriever"
)
CLOTHING = _words(
    "shirt shirts jacket jackets coat coats dress dresses skirt skirts hat hats cap caps helmet helmets sweater "
    "sweaters hoodie hoodies sweatshirt sweatshirts vest vests uniform uniforms costume costumes suit suits scarf "
    "jeans shorts pants trousers sunglasses goggles glasses boots sandals shoes sneakers swimsuit bikini top tank "
    "outfit gloves mask wetsuit jersey apron robe bandana headband tie"
)
PLURAL_ONLY = _words("jeans shorts pants trousers sunglasses goggles glasses")
PAIRS = PLURAL_ONLY | _words("boots sandals shoes sneakers gloves socks skates skis clothes")  # one wears these
# things whose colour is a plausible detail
COLOURABLE = CLOTHING | _words(
    "ball balls frisbee frisbees toy toys kite kites umbrella umbrellas balloon balloons bag bags backpack tent "
    "flag flags sign car cars truck trucks bus bike bikes bicycle bicycles motorcycle motorcycles scooter "
    "skateboard boat boats kayak canoe raft surfboard sled chair chairs bench door fence wall house building "
    "towel blanket bucket cup hose rope stick leash collar bowl box net cone slide swing"
)
TERRAIN = _words("grass sand snow mud dirt water")
# nouns a person or animal can be under as well as on
UNDER_OK = _words("table bridge desk car truck blanket tree")
# nouns with an up and a down (slopes and things to climb)
SLOPES = _words(
    "hill hills slope slopes mountain mountains stairs steps staircase stairway ramp ladder rock rocks wall pole "
    "tree slide dune dunes cliff embankment bank hillside mountainside river stream waterfall escalator"
)
# verbs of motion that go into / out of, onto / off something
MOTION_VERBS = _words(
    "come go walk run jump climb get step swim crawl leap dive fall slide hop ride roll move head emerge look peer "
    "peek drive wade splash race sprint charge"
)
# containers one can go into or out of
CONTAINERS = _words(
    "water pool lake river ocean sea pond puddle fountain waves wave building house car truck bus tent room hole "
    "tunnel store shop box bag cave snow mud tub bathtub bucket crowd woods forest field train subway elevator "
    "restaurant door doorway garage barn cage kennel tube surf"
)
COLLECTIVE = _words(
    "group couple pair lot bunch crowd herd team flock line few variety set number pack row kind sort piece "
    "lots series game match"
)

# --- attributes ----------------------------------------------------------------------------------------------------

COLOURS = ("black", "white", "brown", "red", "blue", "green", "yellow", "pink", "orange", "purple", "grey", "gray")
NATURAL_COLOURS = ("black", "white", "brown", "tan", "grey", "gray", "golden")  # of animals and hair
HAIR_LIKE = _words("hair fur coat mane beard eyes eye")
ATTRIBUTE_CLASS = {
    **{c: "colour" for c in (*COLOURS, "tan", "golden", "silver", "beige", "blond", "blonde")},
    **{w: "size" for w in "big small little large huge tiny giant".split()},
    **{w: "age" for w in "young old older elderly teenage younger".split()},
    **{w: "height" for w in "tall short".split()},
    **{w: "material" for w in "wooden metal plastic stone brick concrete leather".split()},
    **{w: "state" for w in "wet dry empty full open closed clean dirty".split()},
    **{w: "terrain" for w in "grassy sandy snowy rocky muddy".split()},
}
ANTONYMS = _pairs(
    "big:small,little large:small little:big huge:tiny tall:short young:old older:younger elderly:young "
    "wet:dry empty:full open:closed clean:dirty shallow:deep calm:rough busy:empty crowded:empty "
    "long:short curly:straight thick:thin wide:narrow dark:light sunny:cloudy indoor:outdoor happy:sad "
    "grassy:sandy,snowy,rocky sandy:grassy,rocky snowy:grassy,sandy rocky:sandy,grassy muddy:clean "
    "wooden:metal metal:wooden plastic:wooden brick:wooden stone:wooden concrete:wooden",
    both=False,
)
ANTONYMS["old"] = ["young"]  # of people and animals; objects get "new" (see rules)
ANTONYMS["small"] = ["big", "large"]
ANTONYMS["short"] = ["tall", "long"]  # tall for people, long for hair and things (see rules)

# attributes to add, by noun class
ADD_ATTRIBUTES = {
    "adult": ("young", "old", "tall", "smiling", "blond"),
    "child": ("smiling", "blond"),
    "animal": ("black", "white", "brown", "small", "large", "wet"),
    "colourable": tuple(c for c in COLOURS if c != "gray"),
    "water": ("deep", "shallow", "calm", "muddy"),
    "grass": ("tall", "wet", "dry"),
    "sand": ("wet", "dry"),
    "snow": ("deep", "fresh"),
    "street": ("busy", "empty", "wet"),
    "road": ("empty", "wet", "narrow"),
    "beach": ("crowded", "empty", "rocky"),
    "park": ("crowded", "empty"),
    "field": ("muddy", "empty"),
    "hill": ("steep", "snowy", "rocky", "grassy"),
    "mountain": ("steep", "snowy", "rocky"),
    "building": ("tall", "old", "brick"),
}
# an added adjective that repeats a word of the caption (or its noun) is redundant: snowy + snow
RELATED_WORDS = {
    "snowy": "snow",
    "grassy": "grass",
    "sandy": "sand",
    "rocky": "rock",
    "muddy": "mud",
    "wet": "water",
    "smiling": "smile",
}

# --- nouns: co-hyponyms ----------------------------------------------------------------------------------------------

OBJECT_SWAPS = {
    "people": _pairs(
        "man:woman,boy woman:man,girl boy:girl,man girl:boy,woman guy:lady lady:guy father:mother mother:father "
        "dad:mom mom:dad son:daughter daughter:son brother:sister sister:brother husband:wife wife:husband "
        "child:adult kid:adult",
        both=False,
    ),
    "animal": _pairs(
        "dog:cat puppy:kitten horse:donkey,cow cow:sheep sheep:goat duck:goose poodle:terrier,beagle "
        "greyhound:collie,poodle terrier:beagle collie:beagle dalmatian:poodle chihuahua:beagle",
        both=True,
    ),
    "vehicle": _pairs(
        "bike:motorcycle bicycle:motorcycle car:truck bus:train skateboard:scooter kayak:canoe boat:raft sled:toboggan",
        both=True,
    ),
    "clothing": _pairs(
        "shirt:jacket,sweater jacket:coat dress:skirt hat:helmet,cap helmet:cap sweater:jacket hoodie:jacket "
        "jeans:shorts shorts:pants pants:jeans sunglasses:goggles boot:sandal shoe:boot sneaker:boot "
        "swimsuit:dress glove:mitten scarf:tie",
        both=True,
    ),
    "thing": _pairs(
        "ball:frisbee stick:ball frisbee:ball bat:racket guitar:violin piano:guitar trumpet:saxophone "
        "bench:chair couch:bed chair:stool kite:balloon beer:coffee coffee:tea soda:beer sandwich:pizza "
        "book:newspaper umbrella:flag",
        both=True,
    ),
    "terrain": _pairs("grass:sand,snow sand:snow mud:snow dirt:grass", both=True),
    "water": _pairs("ocean:lake lake:river river:lake pool:lake pond:pool sea:lake", both=True),
    "sport": _pairs(
        "soccer:football,rugby football:soccer,rugby basketball:volleyball,tennis tennis:volleyball,badminton "
        "baseball:softball,cricket hockey:lacrosse volleyball:basketball rugby:soccer",
        both=True,
    ),
}
REPLACEABLE_COMPOUNDS = frozenset(OBJECT_SWAPS["sport"])  # sports replace as modifiers too: soccer ball -> tennis ball
SPORT_HEADS = _words("ball game match player team uniform jersey court field practice fan")

# --- verbs: relations ----------------------------------------------------------------------------------------------
# lemma -> replacements; "transitive" ones need a direct object of the listed classes
INTRANSITIVE_SWAPS = _pairs(
    "sit:stand stand:sit lie:sit lay:sit kneel:stand crouch:stand squat:stand run:walk walk:run jog:walk "
    "swim:wade smile:frown laugh:cry cry:laugh float:sink win:lose lose:win",
    both=False,
)
# said of a thing, these place it ("a town lies at the base of a hill"): sitting, lying or standing mean the same
POSTURE_VERBS = _words("sit stand lie lay kneel crouch squat")
MOOD_VERBS = _words("smile frown laugh cry")  # their swaps are moods: an adverb of mood fits only one of each pair
MOOD_ADVERBS = _words("happily cheerfully joyfully gleefully merrily sadly tearfully")  # "smiles happily"
TRANSITIVE_SWAPS = {  # lemma -> [(replacement, object classes or None for any non-living object)]
    "throw": [("catch", None)],
    "catch": [("throw", None)],
    "push": [("pull", None)],
    "pull": [("push", None)],
    "open": [("close", None)],
    "close": [("open", None)],
    "enter": [("leave", None)],
    "leave": [("enter", None)],
    "exit": [("enter", None)],
    "climb": [("descend", None)],
    "descend": [("climb", None)],
    "wear": [("hold", "clothing")],
    "hold": [("wear", "clothing"), ("drop", None)],
    "carry": [("drop", None)],
    "kick": [("throw", "ball")],
    "drink": [("spill", None)],
    "read": [("write", None)],
    "buy": [("sell", None)],
    "sell": [("buy", None)],
    "fill": [("empty", None)],
    "raise": [("lower", None)],
    "lift": [("lower", None)],
    "ride": [("push", "vehicle"), ("lead", "animal")],
    "chase": [("run from", "living")],
    "follow": [("lead", "living")],
    "lead": [("follow", "living")],
}
# objects that make a fixed phrase with their verb ("pulling tricks", "pulls a face", "pops a wheelie")
FIXED_OBJECTS = _words("trick tricks stunt stunts face faces wheelie wheelies pose poses")
# what one walks along but cannot run along ("walking on a rope")
NARROW_WALKS = _words("rope tightrope wire slackline beam")
# their object may not become an adult, and a child may not do them to an adult
CARRY_VERBS = _words("hold carry lift feed cradle hug push throw toss flip swing place put set lay drop pick")
# what an adult does to a child, rarely the other way round ("the lady catches the toddler", "a man raising a boy")
CARE_VERBS = CARRY_VERBS | _words("catch raise pull drag tow teach help lead guide bathe dress")
# verbs done to one object at a time: "plays the trumpet", "catches a ball", "serves the ball" get no second object
ONE_OBJECT_VERBS = _words("ride sit wear drive play kick catch serve swing hit fetch retrieve bite")
ONE_WAY_VERBS = _words("herd")  # a dog herds sheep, a cow does not herd a dog
# things one person rides, sits on or plays at a time: "two men sit on a chair", "a woman plays two violins"
SINGLE_USER_THINGS = _words(
    "skateboard bike bicycle tricycle chair stool swing scooter surfboard snowboard wakeboard bodyboard sled "
    "motorcycle unicycle rifle gun camera guitar violin trumpet saxophone flute cello instrument racket"
)
ANIMAL_GEAR = _words("collar leash harness muzzle")  # an animal has one of each
ONE_PER_BODY = _words("head face nose mouth tongue tail beard neck chin back chest belly")  # "dogs with tongues out"
# worn or wrapped round one wearer when one is "in" it or "wears" it ("in a jumper"; not "a jumper in the air", "on
# a blanket"), beside CLOTHING; read by count only
WRAPS = _words(
    "burka burqa headscarf hijab turban cape cloak gown poncho kimono sari tutu leotard jumper blanket towel"
)
FETCH_THINGS = _words("ball stick frisbee")  # replaced only where something plays with them
FETCH_VERBS = _words("throw catch chase fetch carry hold kick play toss retrieve grab bite")
BALLS = _words("ball balls football soccerball basketball volleyball frisbee")
# swapping doer and undergoer: never for symmetric verbs; a person and an animal only for verbs either can do;
# two animals not for verbs only people do
SYMMETRIC_VERBS = _words(
    "hug kiss embrace fight wrestle meet marry greet face play race join accompany battle box spar"
)
# verbs that need a partner (lemmas, and forms a tagger may read as nouns): "one dog is wrestling" has none
PARTNER_VERBS = _words("hug hugging kiss kissing embrace embracing fight fighting wrestle wrestling spar sparring")
EITHER_WAY_VERBS = _words("chase follow watch approach push pull splash spray kick look stare smile point wave")
HUMAN_AGENT_VERBS = _words(
    "hold carry lift feed photograph help teach pet walk lead ride train brush wash dress groom throw catch pat "
    "comfort tickle guide hand give film retrieve fetch"
)
# prepositions relating two living things in one direction
DIRECTED_PREPOSITIONS = _words("behind after toward towards above below under over at")

# --- spatial words -------------------------------------------------------------------------------------------------
UP_DOWN_VERBS = _words(
    "climb climbing climbs run running runs walk walking walks go going goes come coming comes look looking looks "
    "slide sliding slides ride riding rides ski skiing skis roll rolling rolls hike hiking hikes "
    "head heading heads move moving moves point pointing points reach reaching reaches glance glancing stare "
    "staring bike biking skate skating race racing races swim swimming fly flying flies"
)
FLAT_PATHS = _words(
    "street road sidewalk path trail lane hallway aisle alley block track runway beach field avenue pavement "
    "boardwalk walkway driveway corridor line"
)
# a backdrop a person stands in front of and cannot be behind ("in front of the mountain view", "... of the ocean")
BACKDROPS = _words(
    "view views mountain mountains sky ocean sea lake sunset skyline horizon background scenery landscape waterfall "
    "cliff cliffs backdrop mural painting picture poster wall beach range scene woods forest"
)
# one goes only down on these ("racing down a snowy hill on an innertube", "down a slide")
DOWNHILL_ONLY = _words("slide sled sledge toboggan innertube tube")
# "off" these is no place left ("off a ramp", "air off a jump" launch from it; "off camera", "off leash" are fixed)
OFF_FIXED = _words("leash ramp jump camera")
BARRIERS = _words("fence bar rope net log pole hurdle barrier gate obstacle arch bridge branch")

# --- paraphrase ----------------------------------------------------------------------------------------------------
SYNONYMS = _pairs(
    "guy:man guys:men kid:child kids:children child:kid children:kids little:small big:large large:big "
    "huge:enormous bike:bicycle bicycle:bike bikes:bicycles bicycles:bikes couch:sofa sofa:couch "
    "yelling:shouting shouting:yelling grinning:smiling leaping:jumping jumping:leaping leaps:jumps jumps:leaps "
    "talking:speaking speaking:talking lady:woman ladies:women mom:mother dad:father mother:mom father:dad "
    "sidewalk:pavement pants:trousers trousers:pants sitting:seated photo:picture,photograph picture:photo "
    "photograph:picture toward:towards towards:toward grey:gray gray:grey ocean:sea sea:ocean "
    "stone:rock cellphone:phone",
    both=False,
)
PREPOSITION_SYNONYMS = {"next to": "beside", "beside": "next to", "near": "close to", "atop": "on top of",
                        "on top of": "atop"}  # fmt: skip
PHOTO_WORDS = _words("photo picture photograph")  # synonyms only as "take a picture" / "pose for a photo"
STATIVE = _words("be have own know like seem look appear belong contain")
