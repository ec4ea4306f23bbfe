"""parse_choice on answers written the way chat models write them."""

from __future__ import annotations

import pytest

from deliberation.inference.answer_parsing import parse_choice

HIRING = ["Priya Raghunathan", "Bartosz Wierzbicki", "Adaeze Onyekachi"]
P, B, A = HIRING

CASES = [
    # plain and formatted names
    ("Priya Raghunathan", P),
    ("**Priya Raghunathan**", P),
    ("Priya Raghunathan.", P),
    ("  adaeze onyekachi\n", A),
    # structured output that arrived as text
    ('{"answer": "Bartosz Wierzbicki"}', B),
    ('```json\n{"choice": "Adaeze Onyekachi"}\n```', A),
    ('{"answer": "Priya Raghunathan or Bartosz Wierzbicki"}', None),
    # a letter next to the option's name
    ("(B) Bartosz Wierzbicki", B),
    # the final explicit choice wins over earlier mentions
    (
        "After weighing the evidence, Bartosz Wierzbicki has strong pipeline skills, but Priya"
        " Raghunathan's mentoring record is better.\n\nFinal answer: Priya Raghunathan",
        P,
    ),
    (
        "Let me think step by step.\n1. Priya: strong pipelines and mentoring.\n2. Bartosz:"
        " missed on-call pages.\n3. Adaeze: poor mentoring.\nTherefore, the best option is Priya"
        " Raghunathan.",
        P,
    ),
    (
        "Answer: Priya Raghunathan\n\nOne might choose Bartosz Wierzbicki for his Flink work, but"
        " his on-call record rules him out.",
        P,
    ),
    ("My choice: Adaeze Onyekachi, because her uptime record is excellent.", A),
    (
        "Based on the notes, Bartosz Wierzbicki has two strong reviews, but Priya Raghunathan has"
        " the best mentoring record. Therefore: Priya Raghunathan",
        P,
    ),
    ("I would recommend against Bartosz Wierzbicki. Priya Raghunathan is the better fit.", P),
    ("I would choose Priya Raghunathan.", P),
    ("I recommend Priya.", P),
    ("Priya Raghunathan is the best choice for the role.", P),
    (
        "Both Bartosz Wierzbicki and Priya Raghunathan are strong, but I would go with Priya"
        " Raghunathan.",
        P,
    ),
    ("The group should select Bartosz Wierzbicki over Adaeze Onyekachi.", B),
    ("I would not pick Bartosz Wierzbicki; Priya Raghunathan is the stronger candidate.", P),
    (
        "As an AI, I don't have personal preferences, but based on the criteria, Priya"
        " Raghunathan appears to be the strongest option.",
        P,
    ),
    (
        "## Recommendation\n\n**Adaeze Onyekachi**\n\nAdaeze kept 99.98% uptime, while Bartosz"
        " missed pages.",
        A,
    ),
    # hedges
    ("Probably Bartosz Wierzbicki, though it is a close call.", B),
    ("I'd lean towards Adaeze Onyekachi, but I'm not fully confident.", A),
    ("It's either Priya Raghunathan or Bartosz Wierzbicki.", None),
    ("Priya Raghunathan vs. Bartosz Wierzbicki: hard to say.", None),
    # two options as the final answer are invalid
    ("Final answer: Priya Raghunathan or Bartosz Wierzbicki", None),
    ("Final answer: Priya Raghunathan, Bartosz Wierzbicki", None),
    # refusals and non-answers
    ("I'm sorry, but I can't make this decision based on the information provided.", None),
    ("There is not enough information to decide between the options.", None),
    (
        "I cannot choose between Priya Raghunathan and Bartosz Wierzbicki without more data.",
        None,
    ),
    ("Neither option is clearly better; I would abstain.", None),
    ("", None),
    (None, None),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_parse_choice_reads_chat_model_answers(text, expected):
    assert parse_choice(text, HIRING) == expected


def test_enough_realistic_answers():
    assert len(CASES) >= 30


LETTER_CASES = [
    ("B", B),
    ("Option C", A),
    ("The answer is (A).", P),
    ("**Answer:** B", B),
    ("Answer: C", A),
    ("The best choice is D.", None),
]


@pytest.mark.parametrize(("text", "expected"), LETTER_CASES)
def test_letters_name_positions_when_the_prompt_showed_letters(text, expected):
    assert parse_choice(text, HIRING, letters_shown=True) == expected


@pytest.mark.parametrize(("text", "_"), LETTER_CASES)
def test_letters_name_nothing_when_the_prompt_showed_none(text, _):
    # The project's prompts list options by name: "Option A" names nothing the model saw.
    assert parse_choice(text, HIRING) is None


CANDIDATES = ["Candidate B", "Candidate D", "Candidate A", "Candidate C"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("C", "Candidate C"),  # a bare letter names the option ending in it, not position 3
        ("Candidate C should be hired.", "Candidate C"),
        ("I would hire Candidate A rather than Candidate B.", "Candidate A"),
        ("Option D", "Candidate D"),
    ],
)
def test_letters_that_are_part_of_option_names(text, expected):
    assert parse_choice(text, CANDIDATES) == expected


SUSPECTS = ["Mr. X", "Mr. X's son", "Mrs. Y", "Mr. Z"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The guilty person is Mr. X's son.", "Mr. X's son"),
        ("Final answer: Mr. X. He had been drinking.", "Mr. X"),
        ("Mrs. Y", "Mrs. Y"),
        ("Answer: Mr. Z, who was speeding.", "Mr. Z"),
    ],
)
def test_names_with_abbreviations_and_nested_names(text, expected):
    assert parse_choice(text, SUSPECTS) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I think West City is the safest option.", "West City"),
        ("We should evacuate to North Hill.", "North Hill"),
        ("East Town, since the tunnel is open.", "East Town"),
    ],
)
def test_place_names(text, expected):
    assert parse_choice(text, ["West City", "East Town", "North Hill"]) == expected


# Rules learnt from SmolLM2-135M's free replies (tests/fixtures/choice_replies/): an option
# counts only where the reply names it as its answer.
SCHOOLS = ["Northbridge University", "Halden Online", "Cairnmoor College"]


@pytest.mark.parametrize(
    "text",
    [
        "The 2024 timetable of Northbridge University sets compulsory group project meetings on"
        " Tuesday evenings.",
        "Halden Online is a ten-minute walk from the family's house.",
        "The correct answer is:\nCairnmoor College's library closes at six on weekdays.",
        "1. A 2024 survey at Halden Online found free tutoring for every student.",
        "The bright orange goat that serves as mascot of Cairnmoor College is the only option to"
        " choose from.",
    ],
)
def test_a_restated_fact_that_names_an_option_chooses_nothing(text):
    assert parse_choice(text, SCHOOLS) is None


@pytest.mark.parametrize(
    "text",
    ["A1", "The correct answer is:\nA1, A2, A3", "The answer is: [A1, A3]", "The answer is: A4"],
)
def test_an_agent_tag_chooses_nothing(text):
    assert parse_choice(text, SCHOOLS) is None


def test_an_option_after_an_agent_tag_is_read():
    assert parse_choice("The correct answer is:\n[A3] Halden Online.", SCHOOLS) == "Halden Online"


@pytest.mark.parametrize(
    "text",
    [
        "The only option that is not mentioned in the given information is Halden Online.",
        "The option that is not mentioned in the group's discussion is:\n- Halden Online",
        "Halden Online is not the best choice.",
        "The most natural choice is not determined to be Halden Online.",
    ],
)
def test_an_option_said_not_to_be_meant_chooses_nothing(text):
    assert parse_choice(text, SCHOOLS) is None


@pytest.mark.parametrize(
    "text",
    [
        "The option that should be chosen is Cairnmoor College.",
        "The only option that matches the criteria is Cairnmoor College.",
        "The most suitable school for this student is indeed Cairnmoor College.",
        "Cairnmoor College is the only option that meets all the criteria.",
        "The Cairnmoor College option is the only one that meets the given criteria.",
        "The most appropriate answer is:\nCairnmoor College should be chosen.",
        "1. Cairnmoor College",
        "The best answer is:\n- Cairnmoor College",
        "The correct answer is:\nA. Cairnmoor College",
    ],
)
def test_an_option_named_as_the_answer_is_read(text):
    assert parse_choice(text, SCHOOLS) == "Cairnmoor College"


FUNDS = ["Corvanta World Equity ETF", "Lindenmark Global Index Fund", "Tamberly All-World Tracker"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The correct answer is: Corative World Equity ETF.", FUNDS[0]),  # first word misspelt
        ("The correct answer is:\n- Tamberlall Global Index Fund.", None),  # two names blended
        ("The best option to choose from is Corative Global Index Fund.", None),
    ],
)
def test_a_misspelt_name_is_read_only_when_it_begins_like_the_real_one(text, expected):
    assert parse_choice(text, FUNDS) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            '{"vote": "Halden Online", "rationale": "Its timetable fits shift work and',
            "Halden Online",
        ),
        ('{{"vote": "Halden Online", "rationale": "It fits."}}', "Halden Online"),
        ('{{"vote": "1", "rationale": "2"}, {"idle_choice": "3"}}', None),
    ],
)
def test_an_answer_field_of_json_that_does_not_parse_is_read(text, expected):
    assert parse_choice(text, SCHOOLS) == expected


STARTUPS = ["Option C: Logistics software", "Option A: Biomedical startup", "Option B: AI hardware"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [("Option A", STARTUPS[1]), ("B", STARTUPS[2]), ("The answer is (C).", STARTUPS[0])],
)
def test_a_letter_that_labels_an_option_in_its_name_is_read_wherever_it_is_listed(text, expected):
    # HiddenBench's loader shuffles options named "Option A: ...": the letter, not the position.
    assert parse_choice(text, STARTUPS) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1. Halden Online\n2. Cairnmoor College", None),
        ("- Halden Online\n- Cairnmoor College\n- Northbridge University", None),
        ("1. Halden Online", "Halden Online"),
    ],
)
def test_a_list_of_several_options_chooses_none(text, expected):
    assert parse_choice(text, SCHOOLS) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{{"vote": "1", "rationale": "The best option is to choose Halden Online."}}', None),
        ('{"vote": "Halden Online", "rationale": "x"}, {"vote": "Cairnmoor College"', None),
        ('{"vote": "Halden Online", "rationale": "not Cairnmoor College"', "Halden Online"),
    ],
)
def test_an_answer_field_decides_over_the_rationale_beside_it(text, expected):
    assert parse_choice(text, SCHOOLS) == expected


@pytest.mark.parametrize(
    "text",
    [
        "The first option is:\n- Northbridge University",
        "The first option is Northbridge University.",
        "The options are:\n- Halden Online",
    ],
)
def test_a_line_that_describes_the_options_chooses_none(text):
    assert parse_choice(text, SCHOOLS) is None


SITES = [
    "Site A (Open field with tent)",
    "Site B (Community sports center)",
    "Site C (Hilltop park)",
]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The only option that works safely is Site C, located in a hilltop park.", SITES[2]),
        ("Site B is the best choice.", SITES[1]),
        ("Site", None),
    ],
)
def test_a_name_is_read_by_its_part_before_the_description(text, expected):
    assert parse_choice(text, SITES) == expected


ROUTES = ["Forest Trail", "River Route", "Mountain Pass"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The Forest Trail is the most viable option, as it avoids the river.", ROUTES[0]),
        ("The only safe and reachable route is Mountain Pass.", ROUTES[2]),
        ("The answer is:\nRiver Route' information: Mountain Pass", None),  # a possessive
    ],
)
def test_verdicts_and_subjects_about_the_choice(text, expected):
    assert parse_choice(text, ROUTES) == expected


def test_two_quoted_options_joined_as_the_answer_are_a_list():
    text = 'The only option that can be chosen is "Halden Online" and "Cairnmoor College."'
    assert parse_choice(text, SCHOOLS) is None


# A reply that rejects an option, or names one and takes it back, chooses what a careful reader
# would say it chose: the later choice, or none (issue 46).
PEOPLE = ["Ana Ruiz", "Ben Okafor", "Chen Wei"]
ANA, BEN, CHEN = PEOPLE


@pytest.mark.parametrize(
    "text",
    [
        "Not Ana Ruiz.",
        "Never Ana Ruiz.",
        "Avoid Ana Ruiz.",
        "Reject Ana Ruiz.",
        "Final answer: Not Ana Ruiz",
        "final answer: not ana ruiz",
        "Ana Ruiz is the one to avoid.",
        "Ana Ruiz should be avoided.",
        "Ana Ruiz isn't the right choice.",
        "Ana Ruiz? No.",
        "Anything but Ana Ruiz.",
        "I would choose Ana Ruiz. Wait, no.",
    ],
)
def test_a_rejected_option_is_no_choice(text):
    assert parse_choice(text, PEOPLE) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Not Ana Ruiz \u2014 Ben Okafor is better.", BEN),
        ("Ana Ruiz. Wait, no: Ben Okafor.", BEN),
        ("I would not choose Ana Ruiz; Chen Wei is the better fit.", CHEN),
        ("Not Ana Ruiz but Chen Wei.", CHEN),
        ("Ana Ruiz? No. Chen Wei.", CHEN),
        ("I choose Ana Ruiz. Scratch that: I choose Ben Okafor.", BEN),
        ("My choice: Chen Wei. On second thought, I'll pick Ben Okafor.", BEN),
        ("I choose Ana Ruiz. Actually, Ana Ruiz is right after all.", ANA),
        ("Chen Wei, definitely not Ana Ruiz.", CHEN),
        ("I'd avoid Ben Okafor and choose Ana Ruiz.", ANA),
    ],
)
def test_the_later_choice_wins_over_a_rejected_or_retracted_one(text, expected):
    assert parse_choice(text, PEOPLE) == expected


@pytest.mark.parametrize("word", ["Not", "Never", "Avoid", "Reject", "Hmm", "Nobody", "Banana"])
def test_no_capitalised_word_before_a_full_name_passes_as_a_misspelling(word):
    assert parse_choice(f"{word} Ana Ruiz.", PEOPLE) is None
    assert parse_choice(f"Final answer: {word} Ana Ruiz", PEOPLE) is None


def test_an_option_inside_a_longer_option_is_told_apart_when_rejected():
    streets = ["Oak Street", "Oak Street Annex", "Pine Road"]
    assert parse_choice("Oak Street, not Oak Street Annex.", streets) == "Oak Street"
    assert parse_choice("Not Oak Street but Oak Street Annex.", streets) == "Oak Street Annex"
    assert parse_choice("Not Oak Street Annex.", streets) is None
