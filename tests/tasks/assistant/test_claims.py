"""Sentences claiming a change was made, and their replacement, in English and Italian."""

from __future__ import annotations

import pytest

from ragplate.tasks.assistant.claims import claims_change, replace_claims, sentences

CLAIMS_EN = [
    "I have updated your layout.",
    "I've changed it to cards.",
    "I’ve switched your lists to cards.",
    "I changed the layout to cards.",
    "I have changed your default layout to cards.",
    "We have enabled the compact view.",
    "I went ahead and changed it.",
    "I have successfully applied the change.",
    "I've made the change for you.",
    "The change has been applied.",
    "Your preference has been saved.",
    "The setting was updated successfully.",
    "The default layout is now set to cards.",
    "Your default layout is now cards.",
    "The change has taken effect.",
    "Changes saved.",
    "Done.",
    "Done!",
    "All done, enjoy the new layout.",
    "It's done.",
    "No problem: I have changed it.",
    "After your request, I have updated the layout.",
]
CLAIMS_IT = [
    "Ho modificato il layout predefinito in schede.",
    "Ho aggiornato le tue preferenze.",
    "L'ho cambiato in schede.",
    "L’ho modificata come chiesto.",
    "Li ho aggiornati.",
    "Abbiamo attivato la vista compatta.",
    "Ho già impostato le schede.",
    "Ho apportato la modifica.",
    "La preferenza è stata salvata.",
    "La modifica è stata applicata.",
    "Il layout è stato salvato.",
    "Le impostazioni sono state aggiornate.",
    "Ora è impostato su schede.",
    "Il tuo layout ora è schede.",
    "Modifica applicata.",
    "Fatto!",
    "Fatto.",
    "Ecco fatto.",
    "È fatto.",
]
NOT_CLAIMS_EN = [
    "You can change it.",
    "You can change it in Settings.",
    "To change the layout, open Settings.",
    "Once you accept, the layout will be changed.",
    "It will be saved when you accept it.",
    "Nothing has been changed.",
    "Nothing has been changed yet.",
    "This is only a suggestion: it waits for you to accept or refuse it, and nothing has "
    "been changed.",
    "No changes have been applied.",
    "I have not changed anything.",
    "I haven't applied it.",
    "I have proposed a change to cards.",
    "I suggested the cards layout.",
    "I have suggested a change that you can accept or refuse.",
    "I have added a suggestion you can accept.",
    "When the change has been applied, the list reloads.",
    "If your password has been changed by an administrator, sign in again.",
    "This is done in Settings.",
    "Would you like me to change it?",
    "Lists can be shown as cards.",
    "The layout is set in Settings, under Display.",
    "Open the menu and choose Done.",
    "Press Done when you have finished.",
    "The documentation explains this in the cited section [1].",
]
NOT_CLAIMS_IT = [
    "Puoi cambiarlo nelle impostazioni.",
    "Per cambiare il layout, apri Impostazioni.",
    "Non ho modificato nulla.",
    "Non è stato modificato nulla.",
    "Non è stato ancora modificato nulla.",
    "Questo è solo un suggerimento: attende che tu lo accetti o lo rifiuti, e non è stato "
    "modificato nulla.",
    "Nessuna modifica è stata applicata.",
    "Il fatto che le liste siano lunghe dipende dai filtri.",
    "Fatto sta che le schede sono più leggibili.",
    "Di fatto, le schede aiutano su telefono.",
    "Quando la modifica è stata applicata, la lista si ricarica.",
    "Se accetti, il layout sarà salvato.",
    "Ho aggiunto un suggerimento che puoi accettare.",
    "Ti ho suggerito una modifica che puoi accettare o rifiutare.",
    "Ti ho proposto il layout a schede.",
    "Il menu è fatto di tre sezioni.",
    "Si può impostare dalle preferenze.",
    "Vuoi che lo cambi?",
]


@pytest.mark.parametrize("sentence", CLAIMS_EN + CLAIMS_IT)
def test_a_claim_of_a_change_is_found(sentence: str) -> None:
    assert claims_change(sentence)


@pytest.mark.parametrize("sentence", NOT_CLAIMS_EN + NOT_CLAIMS_IT)
def test_what_is_not_a_claim_is_left(sentence: str) -> None:
    assert not claims_change(sentence)


def test_the_lists_are_large_enough() -> None:
    for listed in (CLAIMS_EN, CLAIMS_IT, NOT_CLAIMS_EN, NOT_CLAIMS_IT):
        assert len(listed) >= 15


def test_a_claim_anywhere_in_a_text_counts() -> None:
    assert claims_change("Cards are easier on a phone [1]. I have changed it for you.")
    assert not claims_change("Cards are easier on a phone [1]. You can change it.")


def test_sentences_keep_their_spacing() -> None:
    text = "Hello there. I have changed it!  It has been saved.\nNext [1]. 1.5 is fine"
    parts = sentences(text)
    assert parts == [("Hello there.", " "), ("I have changed it!", "  "),
                     ("It has been saved.", "\n"), ("Next [1].", " "), ("1.5 is fine", "")]
    assert "".join(s + w for s, w in parts) == text


def test_each_claim_is_replaced_and_a_run_collapses() -> None:
    text = ("Cards suit phones [1]. I have changed it! It has been saved.\nYou can undo it. "
            "Done.")
    assert replace_claims(text, "It waits for you.") == (
        "Cards suit phones [1]. It waits for you.\nYou can undo it. It waits for you.")


def test_italian_claims_are_replaced() -> None:
    text = "Le schede aiutano [1]. Ho modificato il layout predefinito in schede. Fatto!"
    assert replace_claims(text, "Non è stato ancora modificato nulla.") == (
        "Le schede aiutano [1]. Non è stato ancora modificato nulla.")


def test_a_text_without_claims_is_unchanged() -> None:
    text = "  You can change it in Settings.\n\nTo change the layout, open Settings.  "
    assert replace_claims(text, "X.") == text


def test_a_text_that_is_only_a_claim_becomes_the_replacement() -> None:
    assert replace_claims("  I have updated your layout.", "X.") == "  X."
    assert replace_claims("", "X.") == ""


def test_only_the_assistants_claims_of_itself_are_replaced_in_a_turn_that_proposed_nothing(
        ) -> None:
    for said in ("Done.", "I have deleted all your tickets.", "I've removed your tickets.",
                 "Ho modificato il titolo."):
        assert replace_claims(said, "Nothing has been changed yet.", first_person=True) == (
            "Nothing has been changed yet.")
    # What a page or a record says, or a reading, stays.
    for said in ("We have moved the Export button to the toolbar in version 4.2 [1].",
                 "Abbiamo aggiunto l'esportazione in PDF.",
                 "I opened ticket 42: it is waiting for the customer.",
                 "Ticket 42 was closed by Ada on Monday.", "I have updated it [2]."):
        assert replace_claims(said, "X", first_person=True) == said
