"""Settings stated in code blocks and tables, quoted for a question that names them."""

from __future__ import annotations

from ragplate.tasks.assistant.setting_lines import asked_names, named_in, setting_lines

ENV_BLOCK = """A CPU-bound service is slow. Both are **configurable**:

```env
EMBED_TIMEOUT=120   # seconds per request (default 30)
EMBED_BATCH_SIZE=16 # documents per batch (default 32)
```

Keep the batch small enough that one batch completes within the timeout.
"""

TABLE = """| Key | Env | Default | Meaning |
|---|---|---|---|
| `core.locking.column` | `LOCK_COLUMN` | `lock_version` | optimistic version column |
| `core.locking.at` | `LOCK_AT_COLUMN` | `locked_at` | when the lock was **taken**. |
"""


def texts(lines: list) -> list[str]:
    return [line.text for line in lines]


def test_a_configuration_line_is_quoted_as_code_after_the_sentence_introducing_its_block():
    assert texts(setting_lines(ENV_BLOCK, {"EMBED_TIMEOUT"})) == [
        "Both are configurable: `EMBED_TIMEOUT=120 # seconds per request (default 30)`"]
    both = setting_lines(ENV_BLOCK, {"EMBED_TIMEOUT", "EMBED_BATCH_SIZE"})
    assert [sorted(line.names) for line in both] == [["EMBED_TIMEOUT"], ["EMBED_BATCH_SIZE"]]
    # Nothing is asked of: nothing is quoted, and a setting the text lacks finds nothing.
    assert setting_lines(ENV_BLOCK, set()) == []
    assert setting_lines(ENV_BLOCK, {"EMBED_URL"}) == []


def test_a_block_without_an_introducing_sentence_quotes_its_line_alone():
    text = "The defaults suit a GPU.\n\n```bash\nexport EMBED_TIMEOUT=60\n```\n"
    assert texts(setting_lines(text, {"EMBED_TIMEOUT"})) == ["`export EMBED_TIMEOUT=60`"]
    # A compose file's environment list is a configuration line too.
    compose = "Set it in the service:\n\n```yaml\nenvironment:\n  - EMBED_TIMEOUT=60\n```"
    assert texts(setting_lines(compose, {"EMBED_TIMEOUT"})) == [
        "Set it in the service: `- EMBED_TIMEOUT=60`"]
    # A line that only mentions the name is not a configuration line.
    mention = "```\necho EMBED_TIMEOUT is read once\n```"
    assert setting_lines(mention, {"EMBED_TIMEOUT"}) == []


def test_a_table_row_is_quoted_with_its_column_headings():
    assert texts(setting_lines(TABLE, {"LOCK_COLUMN"})) == [
        "Key: `core.locking.column`; Env: `LOCK_COLUMN`; Default: `lock_version`; "
        "Meaning: optimistic version column."]
    assert texts(setting_lines(TABLE, {"LOCK_AT_COLUMN"})) == [
        "Key: `core.locking.at`; Env: `LOCK_AT_COLUMN`; Default: `locked_at`; "
        "Meaning: when the lock was taken."]
    # A chunk that starts inside the table has no headings: the row's cells alone.
    rows = TABLE.splitlines()[2:]
    assert texts(setting_lines("\n".join(rows), {"LOCK_COLUMN"})) == [
        "`core.locking.column` | `LOCK_COLUMN` | `lock_version` | optimistic version column"]


def test_a_short_name_is_named_by_a_longer_one_ending_with_it_only():
    assert named_in({"APP_KEY"}, "Set `RAGPLATE_APP_KEY` first.") == {"APP_KEY"}
    assert named_in({"RAGPLATE_APP_KEY"}, "Laravel reads `APP_KEY`.") == set()
    assert named_in({"APP_KEY"}, "Set `RAGPLATE_EMBEDDINGS_API_KEY`.") == set()
    assert named_in({"APP_KEY"}, "Set `MY_APP_KEYS`.") == set()
    assert named_in(set(), "Set `RAGPLATE_APP_KEY`.") == set()


def test_a_list_item_that_is_no_sentence_is_quoted_as_its_text():
    text = ("Environment:\n\n-   `AR_CALLBACK_KEY`: optional static key expected on callbacks\n"
            "-   `AR_URL` is the provider's base address.\n")
    assert texts(setting_lines(text, {"AR_CALLBACK_KEY"})) == [
        "`AR_CALLBACK_KEY`: optional static key expected on callbacks"]
    # An item that ends like a sentence is prose: the sentence reader quotes it already.
    assert setting_lines(text, {"AR_URL"}) == []


def test_the_introducing_sentence_is_the_last_one_before_the_block_as_prose_reads_it():
    block = "\n\n```\nEMBED_TIMEOUT=60\n```"
    cases = {
        "The index name is read from the environment, e.g. this one:": (
            "The index name is read from the environment, e.g. this one:"),
        "It waits. Set it in `.env`:": "Set it in `.env`:",
        "- Configure **it** here:": "Configure it here:",
        "It waits for the service.": None,
    }
    for before, intro in cases.items():
        quoted = texts(setting_lines(before + block, {"EMBED_TIMEOUT"}))
        assert quoted == [f"{intro} `EMBED_TIMEOUT=60`" if intro else "`EMBED_TIMEOUT=60`"]


def test_code_blocks_hold_configuration_lines_only_and_comments_are_never_read():
    shell = "```\n| Variable | Value |\n|---|---|\n| SHOP_TOKEN | 9f8e7d6c5b4a |\n```"
    assert setting_lines(shell, {"SHOP_TOKEN"}) == []
    assert setting_lines("```bash\nenv | grep APP_KEY\n```", {"APP_KEY"}) == []
    hidden = "<!--\n- `SHOP_MODE`: internal, unreleased pricing experiment\n-->\nText."
    assert setting_lines(hidden, {"SHOP_MODE"}) == []
    row = "| Env | Meaning |\n|-|-|\n| `SHOP_MODE` | mode <!-- ask Bob --> of the shop |"
    assert texts(setting_lines(row, {"SHOP_MODE"})) == [
        "Env: `SHOP_MODE`; Meaning: mode of the shop."]


def test_an_escaped_pipe_stays_inside_its_cell():
    table = "| Env | Values |\n|---|---|\n| `LOCK_MODE` | `a \\| b` choice |"
    assert texts(setting_lines(table, {"LOCK_MODE"})) == [
        "Env: `LOCK_MODE`; Values: `a | b` choice."]


def test_a_list_item_is_read_whole_and_after_the_sentence_it_goes_on_from():
    wrapped = ("Environment:\n\n-   `AR_KEY`: optional static key\n    expected on callbacks\n"
               "-   `AR_URL` is the base.\n")
    assert texts(setting_lines(wrapped, {"AR_KEY"})) == [
        "`AR_KEY`: optional static key expected on callbacks"]
    stops = ("The run stops when a source:\n\n- is not valid UTF-8;\n"
             "- is larger than `MAX_FILE_BYTES` (5,000,000 bytes by default);\n"
             "- has a label that another root also produces.\n")
    assert texts(setting_lines(stops, {"MAX_FILE_BYTES"})) == [
        "The run stops when a source: is larger than `MAX_FILE_BYTES` (5,000,000 bytes by "
        "default)"]
    # Without an introducing sentence, the item alone.
    assert texts(setting_lines("- is larger than `MAX_FILE_BYTES`\n", {"MAX_FILE_BYTES"})) == [
        "is larger than `MAX_FILE_BYTES`"]


def test_a_quoted_value_with_spaces_is_a_configuration_line():
    block = ("Set the roots:\n\n```bash\nexport DOCS_ROOTS='{\"handbook\": \"/srv/handbook\"}'\n"
             "APP_TITLE=\"Team docs\"  # shown in the header\n```\n")
    assert texts(setting_lines(block, {"DOCS_ROOTS", "APP_TITLE"})) == [
        "Set the roots: `export DOCS_ROOTS='{\"handbook\": \"/srv/handbook\"}'`",
        "Set the roots: `APP_TITLE=\"Team docs\" # shown in the header`"]


EXIT_CODES = """When a command fails, it exits with a code that tells what kind of failure it was.

| Exit code | Kind |
|---|---|
| 1 | Other failures |
| 3 | Database failures |

The probe exits with a non-zero code in these cases:

- the profile is unknown (exit code 2);
- the server cannot be reached (exit code 3);
"""


def test_an_exit_code_or_an_http_status_asked_of_is_a_name_an_answer_must_hold():
    assert asked_names("What does exit code 3 mean?") == {"exit code 3"}
    assert asked_names("refresh exits with code 1 but some lists were updated") == {
        "exit code 1"}
    assert asked_names("saving returns HTTP 409, what should the client do?") == {"409"}
    assert asked_names("Why is APP_KEY needed when status 503 comes back?") == {
        "APP_KEY", "503"}
    # An error status a request returns, answers or gets; not a count it returns.
    assert asked_names("streamMessage answers 422 now: where should a client stream?") == {
        "422"}
    assert asked_names("When does the API answer 503?") == {"503"}
    assert asked_names("It returns 100 results, why not 200?") == set()
    # A number alone is no code: "3 retries", "41 straight to 43", "a 10-week-old puppy".
    assert asked_names("Why did ticket numbers jump from 41 straight to 43?") == set()
    assert named_in({"exit code 3"}, "It retries 3 times, then exits with code 2.") == set()
    assert named_in({"exit code 3"}, "The run stops (exit code 3).") == {"exit code 3"}
    assert named_in({"409"}, "A stale save answers 409 Conflict.") == {"409"}
    assert named_in({"409"}, "Version 4090 is not a status.") == set()


def test_an_error_status_named_as_an_error_by_its_reason_or_on_its_own_is_asked_of():
    assert asked_names("What does a 409 mean?") == {"409"}
    assert asked_names("Error 403: 'This action is unauthorized.' on Roles") == {"403"}
    assert asked_names("a 409 error when confirming a proposal") == {"409"}
    assert asked_names("503 Service Unavailable from /v1/help") == {"503"}
    assert asked_names("I got 429 Too Many Requests, now what?") == {"429"}
    assert asked_names("When is a 503 returned?") == {"503"}
    assert asked_names("I got a 409 when saving") == {"409"}
    assert asked_names("Perché ricevo l'errore 409 al salvataggio?") == {"409"}
    # A quantity is no status: a duration, a size, a count, a page size; an Italian "a"
    # is "to"; a lower-case reason word is a word.
    assert asked_names("Posso portare il limite di righe a 500?") == set()
    assert asked_names("Come imposto il timeout a 450, e dove?") == set()
    assert asked_names("How do I move the 450 from stock to production?") == set()
    assert asked_names("Why are there 500 locked records?") == set()
    assert asked_names("We got 401 unauthorized requests yesterday.") == set()
    assert asked_names("Why does it wait a 500 ms timeout?") == set()
    assert asked_names("Is a 400-word limit enough for an excerpt?") == set()
    assert asked_names("Can I upload the 500 MB file?") == set()
    assert asked_names("Does it keep 404 old versions?") == set()
    assert asked_names("We logged 500 errors last night, is that many?") == set()


def test_a_table_row_or_list_item_stating_an_exit_code_is_quoted_with_its_heading():
    assert texts(setting_lines(EXIT_CODES, {"exit code 3"})) == [
        "Exit code: 3; Kind: Database failures.",
        "The probe exits with a non-zero code in these cases: the server cannot be reached "
        "(exit code 3)"]
