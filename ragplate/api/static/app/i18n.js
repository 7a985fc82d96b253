// The page's words in English and Italian. A person's locale comes from
// GET /app/ai/capabilities; anything starting with "it" is Italian, anything else English,
// as the assistant's own fixed texts are.

const STRINGS = {
  en: {
    "app.title": "Help assistant",
    "app.tagline": "Answers from the documentation, with their sources.",
    "noscript": "This page needs JavaScript.",
    "signin.heading": "Sign in",
    "signin.intro": "Sign in with your API token to ask the help assistant.",
    "signin.label": "API token",
    "signin.hint": "An administrator creates one with:",
    "signin.command": "ragplate users token NAME",
    "signin.submit": "Sign in",
    "signin.busy": "Signing in…",
    "signin.invalid": "That token is not valid. Check it and try again.",
    "signin.token_expired": "That token has expired. Ask an administrator for a new one.",
    "signin.expired": "Your session has ended. Sign in again.",
    "signin.guest": "This account cannot use the assistant.",
    "signin.empty": "Enter a token.",
    "signout": "Sign out",
    "conversations.heading": "Conversations",
    "conversations.new": "New conversation",
    "conversations.empty": "No conversations yet.",
    "conversations.untitled": "Untitled conversation",
    "conversations.loading": "Loading…",
    "conversation.new": "New conversation",
    "conversation.intro": "Ask a question about the documentation. Every answer shows the passages it comes from.",
    "conversation.missing": "This conversation no longer exists.",
    "composer.label": "Your question",
    "composer.placeholder": "Ask a question about the documentation",
    "composer.hint": "Enter sends, Shift+Enter starts a new line.",
    "composer.send": "Send",
    "role.user": "You",
    "role.assistant": "Assistant",
    "phase.starting": "Sending…",
    "phase.validating_input": "Checking your question…",
    "phase.retrieving": "Searching the documentation…",
    "phase.generating": "Writing the answer…",
    "phase.validating_output": "Checking the answer…",
    "status.refused": "Refused",
    "status.abstained": "No answer in the documentation",
    "status.clarification": "A question back to you",
    "status.failed": "Not answered",
    "sources.heading": "Sources",
    "citation.open": "Open source {index}: {label}",
    "citation.similarity": "Similarity with your question: {score}",
    "citation.close": "Close",
    "error.failed": "The answer could not be completed: {message}",
    "error.interrupted": "The connection was interrupted. If the answer was saved, it will appear here in a moment.",
    "error.unreachable": "The server did not answer. Try again in a moment.",
    "error.undelivered": "The question did not reach the assistant. It is back in the box below: send it again.",
    "error.unavailable": "The assistant cannot answer right now. Try again in a moment.",
    "error.invalid": "The message was not accepted: {detail}",
    "error.too_large": "The message is too long to send.",
    "error.too_long": "Your question is {length} characters long; the assistant reads at most {limit}. Shorten it and send it again.",
    "error.busy": "Your earlier question is still being answered. Send this one when that answer has arrived.",
    "error.unexpected": "Something went wrong ({status}): {detail}",
    "proposal.list": "Proposed changes",
    "proposal.title": "{operation} · {entity}",
    "proposal.operation.create": "Create",
    "proposal.operation.update": "Update",
    "proposal.operation.delete": "Delete",
    "proposal.operation.bulk_update": "Update several",
    "proposal.operation.bulk_delete": "Delete several",
    "proposal.operation.unknown": "{operation}",
    "proposal.status.proposed": "Awaiting your decision",
    "proposal.status.applied": "Applied",
    "proposal.status.pending_approval": "Waiting for approval",
    "proposal.status.failed": "Failed",
    "proposal.status.rejected": "Rejected",
    "proposal.status.expired": "Expired",
    "proposal.status.unknown": "Status: {status}",
    "proposal.records": "{count} records",
    "proposal.records.one": "1 record",
    "proposal.approval": "Needs approval: once you confirm, it waits for an approver.",
    "proposal.expires": "Confirm by {time}",
    "proposal.expired_at": "Expired on {time}",
    "proposal.already_decided": "This proposal had already been decided elsewhere: this is that decision.",
    "proposal.decided": "Decided on {time}",
    "proposal.confirm": "Confirm",
    "proposal.reject": "Reject",
    "proposal.confirming": "Confirming…",
    "proposal.rejecting": "Rejecting…",
    "proposal.outcome.applied": "Done: the change was made.",
    "proposal.outcome.pending_approval": "Confirmed: it will be made once an approver accepts it.",
    "proposal.outcome.rejected": "You rejected it: nothing was changed.",
    "proposal.outcome.expired": "It was not confirmed in time: nothing was changed.",
    "proposal.outcome.failed": "Nothing was changed: {detail}",
    "proposal.outcome.failed_plain": "Nothing was changed.",
    "proposal.reason.not_offered": "the assistant may no longer do this for you.",
    "proposal.missing": "This proposal no longer exists.",
  },
  it: {
    "app.title": "Assistente della guida",
    "app.tagline": "Risposte dalla documentazione, con le loro fonti.",
    "noscript": "Questa pagina richiede JavaScript.",
    "signin.heading": "Accedi",
    "signin.intro": "Accedi con il tuo token API per fare domande all'assistente.",
    "signin.label": "Token API",
    "signin.hint": "Un amministratore lo crea con:",
    "signin.command": "ragplate users token NOME",
    "signin.submit": "Accedi",
    "signin.busy": "Accesso in corso…",
    "signin.invalid": "Il token non è valido. Controllalo e riprova.",
    "signin.token_expired": "Il token è scaduto. Chiedine uno nuovo a un amministratore.",
    "signin.expired": "La sessione è terminata. Accedi di nuovo.",
    "signin.guest": "Questo account non può usare l'assistente.",
    "signin.empty": "Inserisci un token.",
    "signout": "Esci",
    "conversations.heading": "Conversazioni",
    "conversations.new": "Nuova conversazione",
    "conversations.empty": "Ancora nessuna conversazione.",
    "conversations.untitled": "Conversazione senza titolo",
    "conversations.loading": "Caricamento…",
    "conversation.new": "Nuova conversazione",
    "conversation.intro": "Fai una domanda sulla documentazione. Ogni risposta mostra i passaggi da cui proviene.",
    "conversation.missing": "Questa conversazione non esiste più.",
    "composer.label": "La tua domanda",
    "composer.placeholder": "Fai una domanda sulla documentazione",
    "composer.hint": "Invio per inviare, Maiusc+Invio per andare a capo.",
    "composer.send": "Invia",
    "role.user": "Tu",
    "role.assistant": "Assistente",
    "phase.starting": "Invio…",
    "phase.validating_input": "Controllo della domanda…",
    "phase.retrieving": "Ricerca nella documentazione…",
    "phase.generating": "Scrittura della risposta…",
    "phase.validating_output": "Controllo della risposta…",
    "status.refused": "Rifiutata",
    "status.abstained": "Nessuna risposta nella documentazione",
    "status.clarification": "Una domanda per te",
    "status.failed": "Senza risposta",
    "sources.heading": "Fonti",
    "citation.open": "Apri la fonte {index}: {label}",
    "citation.similarity": "Somiglianza con la domanda: {score}",
    "citation.close": "Chiudi",
    "error.failed": "Non è stato possibile completare la risposta: {message}",
    "error.interrupted": "La connessione si è interrotta. Se la risposta è stata salvata, comparirà qui tra poco.",
    "error.unreachable": "Il server non ha risposto. Riprova tra poco.",
    "error.undelivered": "La domanda non è arrivata all'assistente. È di nuovo nella casella qui sotto: inviala di nuovo.",
    "error.unavailable": "L'assistente non può rispondere in questo momento. Riprova tra poco.",
    "error.invalid": "Il messaggio non è stato accettato: {detail}",
    "error.too_large": "Il messaggio è troppo lungo per essere inviato.",
    "error.too_long": "La domanda è lunga {length} caratteri; l'assistente ne legge al massimo {limit}. Accorciala e inviala di nuovo.",
    "error.busy": "La domanda precedente ha ancora una risposta in preparazione. Invia questa quando quella risposta è arrivata.",
    "error.unexpected": "Qualcosa è andato storto ({status}): {detail}",
    "proposal.list": "Modifiche proposte",
    "proposal.title": "{operation} · {entity}",
    "proposal.operation.create": "Creazione",
    "proposal.operation.update": "Modifica",
    "proposal.operation.delete": "Eliminazione",
    "proposal.operation.bulk_update": "Modifica multipla",
    "proposal.operation.bulk_delete": "Eliminazione multipla",
    "proposal.operation.unknown": "{operation}",
    "proposal.status.proposed": "In attesa della tua decisione",
    "proposal.status.applied": "Applicata",
    "proposal.status.pending_approval": "In attesa di approvazione",
    "proposal.status.failed": "Non riuscita",
    "proposal.status.rejected": "Rifiutata",
    "proposal.status.expired": "Scaduta",
    "proposal.status.unknown": "Stato: {status}",
    "proposal.records": "{count} record",
    "proposal.records.one": "1 record",
    "proposal.approval": "Richiede approvazione: dopo la conferma attende un approvatore.",
    "proposal.expires": "Da confermare entro {time}",
    "proposal.expired_at": "Scaduta il {time}",
    "proposal.already_decided": "Questa proposta era già stata decisa altrove: questa è quella decisione.",
    "proposal.decided": "Decisa il {time}",
    "proposal.confirm": "Conferma",
    "proposal.reject": "Rifiuta",
    "proposal.confirming": "Conferma in corso…",
    "proposal.rejecting": "Rifiuto in corso…",
    "proposal.outcome.applied": "Fatto: la modifica è stata applicata.",
    "proposal.outcome.pending_approval": "Confermata: sarà applicata quando un approvatore la accetterà.",
    "proposal.outcome.rejected": "L'hai rifiutata: non è stato modificato nulla.",
    "proposal.outcome.expired": "Non è stata confermata in tempo: non è stato modificato nulla.",
    "proposal.outcome.failed": "Non è stato modificato nulla: {detail}",
    "proposal.outcome.failed_plain": "Non è stato modificato nulla.",
    "proposal.reason.not_offered": "l'assistente non può più farlo per te.",
    "proposal.missing": "Questa proposta non esiste più.",
  },
};

let current = "en";

/** The page language of a locale such as "it-IT": "it" or "en". */
export function languageOf(locale) {
  return String(locale || "").toLowerCase().startsWith("it") ? "it" : "en";
}

/** Use ``locale``'s language from now on; returns it. */
export function setLanguage(locale) {
  current = languageOf(locale);
  return current;
}

/** The language in use. */
export function language() {
  return current;
}

/** The text of ``key`` in the current language, ``{name}`` filled from ``values``. */
export function t(key, values = {}) {
  const text = STRINGS[current][key] ?? STRINGS.en[key] ?? key;
  return text.replace(/\{(\w+)\}/g,
    (whole, name) => (name in values ? String(values[name]) : whole));
}

/** Put the current language's words into every element marked with data-i18n
 * (its text) or data-i18n-ATTRIBUTE (that attribute) under ``root``. */
export function translate(root) {
  for (const node of root.querySelectorAll("*")) {
    for (const attribute of node.getAttributeNames()) {
      if (attribute === "data-i18n") {
        node.textContent = t(node.getAttribute(attribute));
      } else if (attribute.startsWith("data-i18n-")) {
        node.setAttribute(attribute.slice("data-i18n-".length), t(node.getAttribute(attribute)));
      }
    }
  }
}
