"""parse_choice on answers written the way chat models write them."""

from __future__ import annotations

import pytest

from deliberation.answer_parsing import parse_choice

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
