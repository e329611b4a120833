"""Secrets are redacted before anything is stored or embedded."""

import pytest
from secrets_corpus import KEYS_THAT_NAME_A_SECRET, NAMES_A_SECRET

from loopwarden.schemas.events import ActionPayload
from loopwarden.schemas.redaction import REDACTED, redact, redact_fields, redact_text


def test_passwords_and_tokens():
    text = "login with password: hunter2 and api_key=sk-abcdefghijklmnopqrstuvwx then"
    out = redact_text(text)
    assert "hunter2" not in out and "sk-abc" not in out
    assert out.count(REDACTED) == 2 and out.endswith(" then")
    assert redact_text("Authorization: Bearer abc.def.ghi123456") == (
        "Authorization: Bearer " + REDACTED
    )
    assert redact_text("密码：abc123!") == "密码：" + REDACTED
    assert REDACTED in redact_text("key AKIAABCDEFGHIJKLMNOP leaked")


def test_card_numbers_only_when_luhn_valid():
    assert redact_text("card 4111 1111 1111 1111 ok") == f"card {REDACTED} ok"
    assert redact_text("order 1234 5678 9012 3456") == "order 1234 5678 9012 3456"


CARDS_INSIDE_LONGER_RUNS = [
    # a card right after a token that ends in a digit (issue 47, item 3)
    ("card2 4539 1488 0343 6467", f"card2 {REDACTED}"),
    ("item 3 5500 0000 0000 0004", f"item 3 {REDACTED}"),
    ("order 2024 4539 1488 0343 6467 ok", f"order 2024 {REDACTED} ok"),
    ("x 12 4539148803436467", f"x 12 {REDACTED}"),
    ("4539 1488 0343 6467 2024", f"{REDACTED} 2024"),
    # "3456 4539-1488-0343" passes the check by chance: overlapping candidates go
    # together, rather than leaving "-6467" of the real card in clear
    ("a 1234 5678 9012 3456 4539-1488-0343-6467", f"a 1234 5678 9012 {REDACTED}"),
    # at the end of a sentence
    ("pay with 4539 1488 0343 6467.", f"pay with {REDACTED}."),
    ("pay with 4539148803436467.", f"pay with {REDACTED}."),
]
NOT_CARDS = [
    "ids 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15",  # a list of small numbers
    "order 1234 5678 9012 3456",  # not Luhn-valid, nor any part of it
    "pi 3.14159265358979323",  # a decimal
    "v 3.14159265358979323.5",
]


@pytest.mark.parametrize(("text", "redacted"), CARDS_INSIDE_LONGER_RUNS)
def test_a_card_is_redacted_wherever_it_starts_in_a_longer_run_of_digits(text, redacted):
    assert redact_text(text) == redacted


@pytest.mark.parametrize("text", NOT_CARDS)
def test_digit_runs_that_are_not_cards_stay(text):
    assert redact_text(text) == text


def test_national_ids():
    assert redact_text("id 11010519491231002X end") == f"id {REDACTED} end"
    assert redact_text("ssn 123-45-6789") == f"ssn {REDACTED}"


def test_nested_values_and_secret_keys():
    value = {
        "cmd": "mysql -p password=topsecret",
        "token": "abc",
        "n": 3,
        "items": ["4111-1111-1111-1111"],
    }
    assert redact(value) == {
        "cmd": f"mysql -p password={REDACTED}",
        "token": REDACTED,
        "n": 3,
        "items": [REDACTED],
    }


def test_ordinary_text_is_untouched():
    text = "The deploy on 2026-11-21 failed with exit code 137 after 42 s."
    assert redact_text(text) == text


def test_redacting_twice_changes_nothing_more():
    """A redacted text passes every later redaction unchanged (validation, then storage);
    ``password: [REDACTED]`` used to become ``password: [REDACTED]]``."""
    texts = [
        "login with password: hunter2 and api_key=sk-abcdefghijklmnopqrstuvwx then",
        "Deploy with password: hunter2 and token=abcdef123456 on host db1",
        'config {"password": "hunter2", "secret": \'s3cr3t\'} end',
        "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "Authorization: Bearer abc.def.ghi123456",
        "密码：abc123!",
        "mysql -uroot -phunter2 db and --password hunter3",
        "card 4111 1111 1111 1111 and id 11010519491231002X",
        "postgres://admin:s3cretpw@db:5432/app",
        "key AKIAABCDEFGHIJKLMNOP leaked",
    ]
    for text in texts:
        once = redact_text(text)
        assert once != text
        assert redact_text(once) == once, once


SCREENED_VALUES = [
    {},
    {"cmd": "ls -la", "n": 3, "nested": {"path": "/tmp", "items": ["a", "b"]}},
    {"deep": {"deeper": {"note": "password=hunter2"}}},
    {"deep": [{"x": 1}, {"y": ["ghp_abcdefghijklmnopqrstuvwxyz0123"]}]},
    {"apiKey": 12345},
    {"config": {"client_secret": "s3cr3t", "retries": 2}},
    {"token": {"kind": "opaque"}},
    {"card": [["4111 1111 1111 1111"]]},
    {"secret_note": None, "flag": True},
]


@pytest.mark.parametrize("params", SCREENED_VALUES)
def test_the_one_pass_screen_redacts_exactly_what_the_walk_does(params):
    """redact_fields screens every nested string at once: never less than the walk."""
    payload = ActionPayload(action_type="shell", params=params, error_message="exit 1")
    redacted = redact_fields(payload, ("params", "error_message"))
    assert redacted.params == redact(params)
    assert (redacted is payload) == (redact(params) is params)


# -- ordinary text that names a secret without holding one (issue 32, item 2) ---------------

SECRET_TEXT_REDACTED = [
    ("password: letmein", "letmein"),
    ("the password is hunter2", "hunter2"),
    ("export API_KEY=abc", "abc"),
    ("login password=hunter2xyz then retry", "hunter2xyz"),
    ('{"password": "plain words too"}', "plain words too"),
    ("DB_PASSWORD = 's3cr3t'", "s3cr3t"),
    ("token: abc123def456 (valid)", "abc123def456"),
]


@pytest.mark.parametrize("text", NAMES_A_SECRET)
def test_error_text_that_names_a_secret_reaches_the_agent_intact(text):
    assert redact_text(text) == text


@pytest.mark.parametrize(("text", "secret"), SECRET_TEXT_REDACTED)
def test_a_value_assigned_to_a_secret_key_is_still_redacted(text, secret):
    assert secret not in redact_text(text)


@pytest.mark.parametrize("key", KEYS_THAT_NAME_A_SECRET)
def test_a_key_that_only_mentions_a_secret_keeps_its_value(key):
    assert redact({key: "value-1"}) == {key: "value-1"}


@pytest.mark.parametrize(
    "key", ["password", "db_password", "clientSecret", "X-Api-Key", "AWS_SECRET_ACCESS_KEY",
            "password_confirm", "auth_token", "session_id"],
)  # fmt: skip
def test_a_key_that_names_a_secret_hides_its_value(key):
    assert redact({key: "value-1"}) == {key: "[REDACTED]"}


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("self.password = password", True),
        ("secret=secret,", True),
        ("password: pass", False),
        ("Basic implementation of the solver", True),
        ("Authorization: Basic dXNlcjpwYXNz", False),
    ],
)
def test_variables_and_words_are_not_secrets(text, kept):
    assert (redact_text(text) == text) is kept
