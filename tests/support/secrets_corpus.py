"""Test material shipped with loopwarden: a corpus of secrets that must never be persisted.

Each entry is ``(name, text that carries the secret, the secret itself)``; the
tests and the fault suite put every text in every field an event, a completion
or a memory can carry and look for the secret on every output. Values are
made up (and shaped to pass each detector's format checks).
"""

from __future__ import annotations

SECRETS: tuple[tuple[str, str, str], ...] = (
    ("password assignment", "login password=hunter2xyz then retry", "hunter2xyz"),
    ("json password", '{"user": "admin", "password": "S3cr3t-json!"}', "S3cr3t-json!"),
    ("url credentials", "auth failed for postgres://admin:S3cretUrl@db/prod", "S3cretUrl"),
    ("basic auth header", "Authorization: Basic YWRtaW46aHVudGVyMg==", "YWRtaW46aHVudGVyMg=="),
    (
        "bearer token",
        "curl -H 'Authorization: Bearer tok_live_9a8b7c6d5e4f'",
        "tok_live_9a8b7c6d5e4f",
    ),
    ("mysql -p", "mysql -u root -pMyDbPass42 prod", "MyDbPass42"),
    (
        "aws secret env",
        "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ),
    ("aws key id", "key AKIAIOSFODNN7EXAMPLE leaked", "AKIAIOSFODNN7EXAMPLE"),
    (
        "openai key",
        "use sk-proj-abcdefghijklmnopqrstuvwxyz123456",
        "sk-proj-abcdefghijklmnopqrstuvwxyz123456",
    ),
    (
        "github token",
        "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
        "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    ),
    (
        "jwt",
        "token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    ),
    (
        "private key",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAsecretkeybody\n-----END RSA PRIVATE KEY-----",
        "MIIEowIBAAKCAQEAsecretkeybody",
    ),
    ("card number", "charged card 4111 1111 1111 1111 ok", "4111 1111 1111 1111"),
    # a card right after a token that ends in a digit, and at a sentence's end
    ("card after a digit", "paid with card2 4539 1488 0343 6467 today", "4539 1488 0343 6467"),
    ("card after a number", "item 3 5500 0000 0000 0004 refunded", "5500 0000 0000 0004"),
    ("card ending a sentence", "charged 4539148803436467.", "4539148803436467"),
    ("ssn", "ssn 123-45-6789 on file", "123-45-6789"),
    ("cn id", "id 11010519491231002X", "11010519491231002X"),
    ("slack token", "xoxb-123456789012-abcdefghijkl", "xoxb-123456789012-abcdefghijkl"),
)
"""(name, text, secret) triples."""

SECRET_PARAMS: dict[str, str] = {
    "password": "plainPassw0rd",
    "api_key": "k-1234-plain",
    "clientSecret": "cs-plain-999",
    "Authorization": "Token plain-auth-777",
}
"""Secrets that only their key names give away."""


def all_secrets() -> list[str]:
    """Every secret value of the corpus."""
    return [secret for _, _, secret in SECRETS] + list(SECRET_PARAMS.values())


NAMES_A_SECRET: tuple[str, ...] = (
    "cat: /etc/passwd: Permission denied",
    "sudo: a password is required",
    "Error: token: expired",
    "secret: not found",
    "passwd: Authentication token manipulation error",
    "assert user.password == hashed",
    "if password != expected: fail()",
    'ERROR: password authentication failed for user "postgres"',
    "fatal: Authentication failed for 'https://github.com/org/repo.git/'",
    "KeyError: 'api_key'",
    "401 Unauthorized: token is expired",
    "Invalid credentials: user not found",
    "ValueError: secret must be at least 32 characters",
    "WARNING: the private key file is not readable",
    "if password is None: raise ValueError('password required')",
    "    secret = settings.SECRET_KEY",
    "    password = settings_dict['OPTIONS'].get('password')",
    "def salted_hmac(key_salt, value, secret=None, *, algorithm='sha1'):",
    "SECRET_KEY_FALLBACKS = []",
    "def login(username, password=None):",
    "the token has been revoked",
)
"""Ordinary text that names a secret without holding one: an agent must read it intact."""

KEYS_THAT_NAME_A_SECRET: tuple[str, ...] = (
    "secret_name",
    "auth_method",
    "credentials_file",
    "password_reset_url",
    "token_type",
    "max_tokens",
)
"""Parameter keys that mention a secret; their values are not secrets."""
