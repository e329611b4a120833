"""The redactor runs a pattern only on texts holding a word the pattern cannot match
without: the words are read from each pattern's source, and gating changes no output."""

import re

import pytest
from secrets_corpus import KEYS_THAT_NAME_A_SECRET, NAMES_A_SECRET

from loopwarden.schemas.redaction import REDACTED, WORDS, Redactor, _Step
from loopwarden.schemas.regex_gates import required_words


@pytest.mark.parametrize(
    ("pattern", "words"),
    [
        (r"ghp_[A-Za-z0-9_]{36}", None),
        (r"(?:key|pwd)?=([a-z]{24})", None),  # the group is optional
        (r"(?:key|pwd){0,2}=([a-z]{24})", None),
        (r"pas?s=([a-z]{24})", None),  # "pas" matches too
        (r"p\w=([a-z]{24})", None),  # \w is not a "w"
        (r"p[w]d=([a-z]{24})", None),  # a class is not a letter
        (r"(?!token)[a-z]{24}", None),  # a negative look-ahead asserts absence
        (r"(?i)key=([a-z]{24})", {"key"}),
        (r"(?:cl|x)(?:key|pwd|token)=([a-z]{24})", {"key", "pwd", "pw", "token"}),
        (r"(?:key|)=([a-z]{24})", None),  # an empty alternative
        (r"(?:https?\:\/\/)[\w\-]+\:([a-z]{24})\@", {"://"}),
        (r"secret[-_]?(?:access)?[-_]?key", {"secret", "key"}),
        (r"(\bmysql\b[^\n]*?\s-p)(\S+)|(--password[= ])(\S+)", {"mysql", "pass"}),
        (r"(\bmysql\b[^\n]*?\s-p)(\S+)|--user=(\S+)", None),  # one branch has none
        (r"[(|)]auth", {"auth"}),  # brackets and bars inside a class are not groups
        (r"(?P<k>token)+=\S+", {"token"}),
        (r"(?<=bearer )\S{20}", {"bearer"}),  # a look-behind's text is in the text
        (r"-----BEGIN [A-Z ]*PRIVATE KEY", {"begin", "key"}),
    ],
)
def test_required_words(pattern, words):
    found = required_words(re.compile(pattern), WORDS)
    assert found == (None if words is None else frozenset(words))


def test_every_word_found_is_in_every_match():
    """What the gate promises, on patterns and texts that match them."""
    cases = {
        r"(?:cl|x)(?:key|pwd|token)=([a-z]{3})": ["clkey=abc", "xtoken=abc"],
        r"secret[-_]?(?:access)?[-_]?key": ["secret_access-key", "secretkey"],
        r"(\bmysql\b[^\n]*?\s-p)(\S+)|(--password[= ])(\S+)": ["mysql -u a -pX", "--password=x"],
    }
    for pattern, texts in cases.items():
        words = required_words(pattern, WORDS)
        assert words
        for text in texts:
            assert re.search(pattern, text)
            assert any(word in text.lower() for word in words), (pattern, text)


def ungated() -> Redactor:
    """The redactor as it was before the gates: every pattern on every text that has a
    word, a long token run or a long digit run."""
    redactor = Redactor()
    redactor.steps = [_Step(s.pattern, s.replace, None, s.check) for s in redactor.steps]
    return redactor


def test_most_plugins_are_gated():
    gated = [step for step in Redactor().steps if step.words is not None]
    assert len(gated) >= 20  # the look-behind plugins (IBM, Cloudant, Softlayer) among them
    assert all(step.words <= frozenset(WORDS) for step in gated)


IBM_KEY = "a" * 20 + "B" * 24  # 44 token characters, the IBM Cloud IAM shape
CLOUDANT_HEX = "0123456789abcdef" * 4


@pytest.mark.parametrize(
    "text",
    [
        f"ibm_cloud_iam_key = '{IBM_KEY}'",
        f"cloudant_password: {CLOUDANT_HEX}",
        f"softlayer_api_key={CLOUDANT_HEX}",
        f"cos_hmac_secret_access_key = {'ab12' * 12}",
        f"https://user:{CLOUDANT_HEX}@acct.cloudant.com",
        f"no key word here, just {IBM_KEY} and astropy__astropy-13236 in a path",
        *NAMES_A_SECRET,
        *(f"{key}=Xq9-27fhsQ0rLm" for key in KEYS_THAT_NAME_A_SECRET),
    ],
)
def test_gating_changes_no_output(text):
    assert Redactor().text(text) == ungated().text(text)


def test_the_gated_plugins_still_redact():
    redactor = Redactor()
    assert REDACTED in redactor.text(f"cloudant_password: {CLOUDANT_HEX}")
    assert IBM_KEY not in redactor.text(f"ibm_cloud_iam_key = '{IBM_KEY}'")
    assert CLOUDANT_HEX not in redactor.text(f"https://user:{CLOUDANT_HEX}@acct.cloudant.com")
