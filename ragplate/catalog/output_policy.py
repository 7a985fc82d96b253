"""The output policy's rules, as data: shapes and topics an answer must not hold.

``SECRET_RULES`` apply to every profile (a key, a token or a private key is never part of an
answer); ``END_USER_RULES`` to end-user answers (the in-app profile): restricted topics
(licences, code, databases, other users, hidden records, permission and ACL internals,
cryptography), PHP and SQL shapes and environment-variable assignments. A match turns the
whole answer into a refusal. Matched on the answer as written (case-insensitive unless a
rule needs case).
"""

from __future__ import annotations

from ragplate.catalog.guardrails import Rule

SECRET_RULES: tuple[Rule, ...] = (
    Rule("output-api-key", "output_secret",
         r"\b(sk-(proj-|ant-)?[A-Za-z0-9_-]{20,}|AKIA[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{30,}|"
         r"xox[abprs]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{35}|rp_[A-Za-z0-9_-]{30,}|"
         r"glpat-[A-Za-z0-9_-]{20}|sk_live_[A-Za-z0-9]{20,})",
         "Use the key sk-proj-abcdefghijklmnopqrstuvwx1234 in the header.",
         "Create a key in the provider's console and paste it in the settings page."),
    Rule("output-bearer", "output_secret",
         r"(?i)\bbearer\s+[A-Za-z0-9._~+/-]{16,}=*",
         "Send Authorization: Bearer 9f8e7d6c5b4a39281706f5e4d3c2b1a0.",
         "Send your API token in the Authorization header as a bearer token."),
    Rule("output-jwt", "output_secret",
         r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
         "Your session is eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NSJ9.abcdefghijk.",
         "Sessions are signed tokens that expire after two hours."),
    Rule("output-private-key", "output_secret",
         r"-----BEGIN ([A-Z0-9]+ )*PRIVATE KEY-----",
         "-----BEGIN RSA PRIVATE KEY-----\nMIIEow...",
         "Keep the certificate files on the server only."),
)

END_USER_RULES: tuple[Rule, ...] = (
    # Anywhere in the text, not only at a line's start: "Set DB_PASSWORD=x in the file", an
    # inline `export A_B=c`, `process.env.A_B=c`, `$A_B=c`, `A_B := c`, a list item or a
    # quote hand over the same setting. "==", "=>" and "=~" compare or map; a name read
    # whole follows no word character, and one in a URL's query (?A_B=c, &A_B=c) is no
    # setting.
    Rule("output-env-assignment", "output_code",
         r"(?<![\w?&/-])(export\s+)?[A-Z][A-Z0-9]*_[A-Z0-9_]+\s*:?=\s*(?![=>~])\S",
         "Set it with:\nDB_PASSWORD=secret",
         "Ask your administrator to change the mail settings."),
    Rule("output-php", "output_code",
         r"<\?php|\$[a-z_][a-z0-9_]*\s*(=|->)|->[a-z_]\w*\(|\b[A-Z]\w+::[a-z_]\w*\(|"
         r"\bnamespace\s+[A-Z]\w*(\\\w+)+|\bfunction\s+[a-z_]\w*\s*\(\s*\$",
         "Call $user->assignRole('editor') in a tinker session.",
         "Open the user's page and choose the role Editor."),
    Rule("output-sql", "output_code",
         # SQL keywords as SQL writes them (upper case), or lower case in a statement's
         # shape: "select the contents, then delete from the menu" is an instruction.
         r"\b(SELECT\s+[\w*,.\s()]{1,80}?\s+FROM\s+\w+|INSERT\s+INTO\s+\w+|UPDATE\s+\w+\s+SET\s+"
         r"\w+\s*=|DELETE\s+FROM\s+\w+|(?i:drop\s+(table|database|schema)\s+\w+|create\s+"
         r"(table|database)\s+\w+|alter\s+table\s+\w+|truncate\s+table\s+\w+|grant\s+\w+\s+"
         r"on\s+\w+|select\s+[\w*,.]+\s+from\s+\w+\s+where\s+\w+\s*=|insert\s+into\s+\w+\s*\(|"
         r"update\s+\w+\s+set\s+\w+\s*=|delete\s+from\s+\w+\s+where))",
         "Run SELECT email FROM users WHERE tenant = 'acme'.",
         "Select the contents you want, then choose Delete from the menu."),
    Rule("output-restricted-topic", "output_restricted_topic",
         r"(?i)\b(licen[cs]e (key|code|file|server)|chiave di licenza|source code|codice "
         r"sorgente|database (password|credentials|schema|user|host|dump)|password del database|"
         r"connection string|stringa di connessione|other users'? (data|conversations|messages|"
         r"emails|passwords)|dati di altri utenti|hidden records?|record nascost\w*|acl "
         r"(expression|internals|rule syntax|implementation)|permission (internals|matrix "
         r"internals|check implementation)|encryption (key|algorithm|implementation)|chiave di "
         r"cifratura|cipher suite|hashing algorithm|algoritmo di (hash|cifratura)|app_key|"
         r"secret key|private key|chiave privata)\b",
         "The licence key is stored in the licence server table.",
         "Ask your administrator to renew the subscription."),
)


def output_rules(end_user: bool) -> tuple[Rule, ...]:
    """The rules of a profile: secrets always, the end-user rules for end users."""
    return SECRET_RULES + (END_USER_RULES if end_user else ())
