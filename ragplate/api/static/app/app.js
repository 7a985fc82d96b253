// The chat page: sign in with a bearer token, pick or start a conversation, ask, and watch
// the answer arrive over POST /app/ai/agent's event stream.
//
// Message text is only ever set with textContent or text nodes: an answer quotes the
// documentation, and a question is whatever a person typed.
//
// A write the assistant proposed (an entry of the message's metadata.writes) is a card under
// the message, with Confirm and Reject while it is "proposed": the person's decision goes to
// /app/crud/update/ai/assistant-writes/{id}/confirm or …/reject, outside the model. Its
// summary holds values the model chose, so it is text like the rest.
//
// Each event of the stream is also dispatched on window as a "ragplate:stream"
// CustomEvent (its detail the event's JSON), for a script of this page (an extension, a
// test) to follow the delivery.

import {
  ApiError,
  askStreaming,
  capabilities,
  createConversation,
  decideWrite,
  deleteConversation,
  getConversation,
  getWrite,
  listConversations,
} from "./api.js";
import { language, languageOf, setLanguage, t, translate } from "./i18n.js";

const TOKEN_KEY = "ragplate.token";
const LOCALE_KEY = "ragplate.locale";
const TITLE_LENGTH = 80;
// What the API answers before it stores anything of a question: too large, invalid, too
// many streams of this person, no stream slot free.
const REFUSED_BEFORE_WORK = new Set([413, 422, 429, 503]);

const $ = (id) => document.getElementById(id);

const state = {
  token: null,
  conversations: [],
  currentId: null,
  stream: null, // the AbortController of the answer being received
  maxChars: 4000, // the assistant's limit, as GET /app/ai/capabilities says it
};

// ---- Small DOM helpers -------------------------------------------------------------------

function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "className") node.className = value;
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children) {
    if (child !== null && child !== undefined) {
      node.append(typeof child === "string" ? document.createTextNode(child) : child);
    }
  }
  return node;
}

function show(view) {
  $("signin-view").hidden = view !== "signin";
  $("chat-view").hidden = view !== "chat";
  $("signout").hidden = view !== "chat";
}

function applyLanguage(locale) {
  const lang = setLanguage(locale);
  document.documentElement.lang = lang;
  document.title = `ragplate · ${t("app.title")}`;
  translate(document.body);
}

function formatScore(score) {
  const value = Number(score);
  if (!Number.isFinite(value)) return "";
  return new Intl.NumberFormat(language(), { maximumFractionDigits: 2, minimumFractionDigits: 2 })
    .format(value);
}

function titleOf(text) {
  const line = text.replace(/[\u0000-\u001f\u007f]+/g, " ").replace(/\s+/g, " ").trim();
  return line.length > TITLE_LENGTH ? `${line.slice(0, TITLE_LENGTH - 1).trimEnd()}…` : line;
}

function formatTime(stamp) {
  const date = new Date(stamp);
  if (!stamp || Number.isNaN(date.getTime())) return "";
  return new Intl.DateTimeFormat(language(), { dateStyle: "medium", timeStyle: "short" })
    .format(date);
}

function scrollToEnd() {
  const scroller = $("messages-scroller");
  scroller.scrollTop = scroller.scrollHeight;
}

function announce(text) {
  $("announcer").textContent = text;
}

function showError(text) {
  $("chat-error").textContent = text || "";
}

// ---- Citations ---------------------------------------------------------------------------

let citationOpener = null;

function openCitation(citation, index, opener) {
  $("citation-label").textContent = `[${index}] ${citation.source_label}`;
  $("citation-excerpt").textContent = citation.excerpt;
  const score = formatScore(citation.score);
  $("citation-score").textContent = score ? t("citation.similarity", { score }) : "";
  citationOpener = opener;
  $("citation").showModal();
  // Focus goes to Close, at the end: a long excerpt on a small screen would open scrolled
  // past its heading and its start.
  $("citation").scrollTop = 0;
}

function citationLink(citation, index, text, className) {
  const link = el("a", {
    href: `#source-${index}`,
    className,
    "aria-haspopup": "dialog",
    "aria-label": t("citation.open", { index, label: citation.source_label }),
  }, text);
  link.addEventListener("click", (event) => {
    event.preventDefault();
    openCitation(citation, index, link);
  });
  return link;
}

/** ``text`` into ``container``, each "[n]" naming a known citation made a link to it. */
function fillAnswer(container, text, citations) {
  const parts = [];
  let last = 0;
  for (const match of text.matchAll(/\[(\d+)\]/g)) {
    const index = Number(match[1]);
    const citation = citations[index - 1];
    if (!citation) continue;
    if (match.index > last) parts.push(document.createTextNode(text.slice(last, match.index)));
    parts.push(citationLink(citation, index, match[0], "marker"));
    last = match.index + match[0].length;
  }
  if (last < text.length) parts.push(document.createTextNode(text.slice(last)));
  container.replaceChildren(...parts);
}

function sourcesList(citations) {
  const items = citations.map((citation, i) =>
    el("li", {}, citationLink(citation, i + 1, citation.source_label, "source-link")));
  return el("section", { className: "sources" },
    el("h3", {}, t("sources.heading")),
    el("ol", {}, ...items));
}

// ---- Messages ----------------------------------------------------------------------------

const BADGES = {
  refused: "status.refused",
  abstained: "status.abstained",
  clarification: "status.clarification",
  failed: "status.failed",
};

/** The parts of an assistant message, to fill as its events arrive. */
function assistantShell(status) {
  const text = el("div", { className: "text" });
  const badge = el("p", { className: "badge" });
  const phase = el("p", { className: "phase", "aria-hidden": "true" });
  const sources = el("div", { className: "sources-slot" });
  const writes = el("div", { className: "writes-slot" });
  const item = el("li", { className: "message assistant" },
    el("p", { className: "role" }, t("role.assistant")), badge, text, writes, phase, sources);
  const shell = { item, text, badge, phase, sources, writes };
  setStatus(shell, status);
  return shell;
}

function setStatus(shell, status) {
  shell.item.dataset.status = status;
  const badge = BADGES[status];
  shell.badge.hidden = !badge;
  shell.badge.textContent = badge ? t(badge) : "";
}

function userMessage(text) {
  return el("li", { className: "message user" },
    el("p", { className: "role" }, t("role.user")), el("div", { className: "text" }, text));
}

/** An assistant message; ``stored``: read back from the conversation, so its proposals'
 * states are those of when it was answered and are read again. */
function assistantMessage(message, { stored = false } = {}) {
  const shell = assistantShell(message.status || "answered");
  if (message.id) shell.item.dataset.messageId = message.id;
  if (message.refusal_category) shell.item.dataset.refusalCategory = message.refusal_category;
  const citations = message.status === "answered" ? message.citations || [] : [];
  fillAnswer(shell.text, message.text || "", citations);
  shell.phase.remove();
  if (citations.length) shell.sources.replaceChildren(sourcesList(citations));
  const writes = (message.metadata && message.metadata.writes) || [];
  if (Array.isArray(writes) && writes.length) {
    shell.writes.replaceChildren(proposalList(writes.filter((w) => w && w.id), { stored }));
  }
  return shell.item;
}

// ---- Proposed writes ---------------------------------------------------------------------

const DECIDED = new Set(["applied", "pending_approval", "failed", "rejected", "expired"]);
const OPERATIONS = new Set(["create", "update", "delete", "bulk_update", "bulk_delete"]);
/** What a failure's ``outcome.reason`` means, where the page has words of its own for it. */
const REASONS = { not_offered: "proposal.reason.not_offered" };

let proposalNumber = 0;

/** A fresh Idempotency-Key: crypto.randomUUID() needs a secure context, which a page
 * served over plain HTTP from another host is not; getRandomValues works everywhere. */
function idempotencyKey() {
  if (typeof crypto.randomUUID === "function") return crypto.randomUUID();
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

// Statuses that may have moved on since a message was stored: a proposal confirmed in
// another tab, expired, or approved (or not) by an approver.
const OPEN_STATUSES = new Set(["proposed", "pending_approval"]);

function proposalList(writes, { stored = false } = {}) {
  return el("section", { className: "proposals", "aria-label": t("proposal.list") },
    ...writes.map((write) => proposalCard(write, { stored })));
}

/** Read ``card``'s proposal again and redraw it; left as it is when that fails (the card
 * then says what the message stored, and a decision still gets the server's answer). */
async function refreshProposal(card) {
  const token = state.token;
  if (!token) return;
  const version = card.version;
  try {
    const now = await getWrite(token, card.write.id);
    // A decision made meanwhile is newer than what this read found.
    if (card.busy || card.version !== version || state.token !== token) return;
    if (now.status === "proposed" && card.write.status !== "proposed") return;
    card.write = { ...card.write, ...now };
    drawProposal(card);
  } catch (error) {
    // Deleted, or the server away: what the message stored stays shown.
  }
}

/** Where a ``pending_approval`` proposal stands with its approvers: ``null`` while none
 * of its modifications is decided (or none is known), else ``{state, approved, decided,
 * count, decidedAt}``; ``state`` is ``approving`` while some still wait. */
function approvalOf(write) {
  const approvals = Array.isArray(write.approvals) ? write.approvals.filter(Boolean) : [];
  if (write.status !== "pending_approval" || !approvals.length) return null;
  const isDecided = (a) => a.status === "approved" || a.status === "disapproved";
  const decided = approvals.filter(isDecided).length;
  if (decided === 0) return null;
  const approved = approvals.filter((a) => a.status === "approved").length;
  const count = approvals.length;
  const state = decided < count ? "approving" : approved === count ? "approved"
    : approved === 0 ? "disapproved" : "partly_approved";
  const decidedAt = state === "approving" ? null
    : approvals.map((a) => a.decided_at).filter(Boolean).sort().pop() || null;
  return { state, approved, decided, count, decidedAt };
}

/** How many record keys a card names per decision before it says how many more. */
const LISTED_RECORDS = 10;

/** For a change of several records whose approvers decided some but not all alike: one
 * line per decision naming its records (``[]`` otherwise: the outcome says it all). */
function recordDecisions(write, approval) {
  if (!approval || !["approving", "partly_approved"].includes(approval.state)) return [];
  const keyed = write.approvals.filter((a) => a && a.record_key != null);
  return ["approved", "disapproved", "pending"].flatMap((decision) => {
    const keys = keyed.filter((a) => a.status === decision).map((a) => `#${a.record_key}`);
    if (!keys.length) return [];
    const shown = keys.slice(0, LISTED_RECORDS).join(", ");
    const records = keys.length > LISTED_RECORDS
      ? t("proposal.records.more", { records: shown, count: keys.length - LISTED_RECORDS })
      : shown;
    return [el("span", { className: `proposal-records-${decision}` },
               t(`proposal.records.${decision}`, { records }))];
  });
}

/** The card of one proposed write; its state is redrawn from the proposal each time the
 * server answers with it. */
function proposalCard(write, { stored = false } = {}) {
  const number = ++proposalNumber;
  const summaryId = `proposal-${number}-summary`;
  const card = {
    write,
    busy: null, // "confirm" or "reject" while that request runs
    version: 0, // counts the server's answers drawn: an older read is not drawn after one
    node: el("article", { className: "proposal", "data-proposal-id": write.id,
                          "aria-labelledby": `proposal-${number}-title` }),
    title: el("h3", { id: `proposal-${number}-title`, className: "proposal-title" }),
    status: el("p", { className: "proposal-status" }),
    summary: el("p", { id: summaryId, className: "proposal-summary" }),
    details: el("ul", { className: "proposal-details" }),
    outcome: el("p", { className: "proposal-outcome", tabindex: "-1" }),
    error: el("p", { className: "proposal-error error", role: "alert" }),
    actions: el("div", { className: "proposal-actions" }),
  };
  card.confirm = el("button", { type: "button", className: "primary proposal-confirm",
                                "aria-describedby": summaryId });
  card.reject = el("button", { type: "button", className: "secondary proposal-reject",
                               "aria-describedby": summaryId });
  card.confirm.addEventListener("click", () => decide(card, "confirm"));
  card.reject.addEventListener("click", () => decide(card, "reject"));
  card.actions.append(card.confirm, card.reject);
  card.node.append(
    el("div", { className: "proposal-head" }, card.title, card.status),
    card.summary, card.details, card.outcome, card.error, card.actions);
  drawProposal(card);
  if (stored && OPEN_STATUSES.has(write.status)) refreshProposal(card);
  return card.node;
}

function operationLabel(write) {
  const operation = OPERATIONS.has(write.operation) ? write.operation : "unknown";
  return t(`proposal.operation.${operation}`, { operation: String(write.operation) });
}

function outcomeText(write) {
  const outcome = write.outcome || {};
  const approval = approvalOf(write);
  if (approval) {
    return t(`proposal.outcome.${approval.state}`, {
      approved: approval.approved, decided: approval.decided, count: approval.count });
  }
  switch (write.status) {
    case "applied": return t("proposal.outcome.applied");
    case "pending_approval": return t("proposal.outcome.pending_approval");
    case "rejected": return t("proposal.outcome.rejected");
    case "expired": return t("proposal.outcome.expired");
    case "failed": {
      const reason = REASONS[outcome.reason];
      const detail = reason ? t(reason) : outcome.detail || outcome.reason || "";
      return detail ? t("proposal.outcome.failed", { detail })
        : t("proposal.outcome.failed_plain");
    }
    default: return "";
  }
}

function drawProposal(card) {
  const { write } = card;
  // A status this page does not know is shown as it is, with nothing to click.
  const status = DECIDED.has(write.status) || write.status === "proposed"
    ? write.status : "unknown";
  card.node.dataset.status = status;
  const approval = approvalOf(write);
  if (approval) card.node.dataset.approval = approval.state;
  else delete card.node.dataset.approval;
  card.title.textContent = t("proposal.title", {
    operation: operationLabel(write),
    entity: [write.module, write.entity].filter(Boolean).join("."),
  });
  card.status.textContent = approval && approval.state !== "approving"
    ? t(`proposal.status.${approval.state}`)
    : t(`proposal.status.${status}`, { status: String(write.status) });
  card.summary.textContent = String(write.summary ?? "");

  const details = [];
  const count = Number(write.record_count);
  if (String(write.operation).startsWith("bulk_") && Number.isFinite(count)) {
    details.push(t(count === 1 ? "proposal.records.one" : "proposal.records", { count }));
  }
  if (write.requires_approval && status === "proposed") {
    details.push(el("span", { className: "proposal-approval" }, t("proposal.approval")));
  }
  if (status === "proposed") {
    const expires = formatTime(write.expires_at);
    const past = new Date(write.expires_at).getTime() <= Date.now();
    if (expires) {
      details.push(el("span", { className: "proposal-expiry" },
        t(past ? "proposal.expired_at" : "proposal.expires", { time: expires })));
    }
  } else if (status === "expired") {
    const expired = formatTime(write.expires_at);
    if (expired) details.push(t("proposal.expired_at", { time: expired }));
  } else {
    const decided = formatTime(approval && approval.decidedAt ? approval.decidedAt
      : write.resolved_at);
    if (decided) details.push(t("proposal.decided", { time: decided }));
  }
  details.push(...recordDecisions(write, approval));
  card.details.replaceChildren(...details.map((detail) => el("li", {}, detail)));

  const open = status === "proposed";
  card.outcome.textContent = open ? "" : outcomeText(write);
  card.outcome.hidden = open;
  if (!open) card.actions.remove(); // decided for good: nothing left to click
  if (card.busy) card.node.setAttribute("aria-busy", "true");
  else card.node.removeAttribute("aria-busy");
  card.confirm.disabled = card.reject.disabled = Boolean(card.busy);
  card.confirm.textContent = t(card.busy === "confirm" ? "proposal.confirming"
    : "proposal.confirm");
  card.reject.textContent = t(card.busy === "reject" ? "proposal.rejecting"
    : "proposal.reject");
}

function messageOfDecisionError(error) {
  if (error instanceof ApiError && error.status === 404) return t("proposal.missing");
  return messageOfError(error);
}

async function decide(card, decision) {
  if (card.busy || card.write.status !== "proposed" || !state.token) return;
  const token = state.token;
  const button = decision === "confirm" ? card.confirm : card.reject;
  card.busy = decision;
  card.version += 1;
  card.error.textContent = "";
  drawProposal(card);
  try {
    card.write = { ...card.write, ...await decideWrite(token, card.write.id, decision,
                                                       idempotencyKey()) };
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) {
      card.busy = null;
      signOut(t("signin.expired"));
      return;
    }
    // The request may have been decided even so (the answer lost on its way back): what
    // the server holds now says.
    const now = await getWrite(token, card.write.id).catch(() => null);
    if (now && DECIDED.has(now.status)) {
      card.write = { ...card.write, ...now };
    } else {
      card.busy = null;
      drawProposal(card);
      card.error.textContent = messageOfDecisionError(error);
      button.focus();
      return;
    }
  }
  card.busy = null;
  drawProposal(card);
  // A proposal decided elsewhere (another tab) answers with that first decision.
  const rejected = card.write.status === "rejected";
  if (DECIDED.has(card.write.status) && card.write.status !== "expired"
      && rejected !== (decision === "reject")) {
    card.error.textContent = t("proposal.already_decided");
  }
  announce(`${card.status.textContent}. ${card.outcome.textContent}`);
  // The buttons are gone: the keyboard's place moves to what happened.
  if (!card.outcome.hidden) card.outcome.focus();
}

function renderMessages(messages) {
  const list = $("messages");
  list.replaceChildren(...messages.map((message) =>
    message.role === "user" ? userMessage(message.text)
      : assistantMessage(message, { stored: true })));
  $("conversation-intro").hidden = messages.length > 0;
  scrollToEnd();
}

// ---- Conversations -----------------------------------------------------------------------

function renderConversationList() {
  const list = $("conversation-list");
  list.replaceChildren(...state.conversations.map((conversation) => {
    const button = el("button", {
      type: "button",
      className: "conversation-item",
      "aria-current": conversation.id === state.currentId ? "true" : null,
      "data-id": conversation.id,
      title: conversation.title || null,
    }, conversation.title || t("conversations.untitled"));
    button.addEventListener("click", () => openConversation(conversation.id));
    return el("li", {}, button);
  }));
  const empty = $("conversation-list-empty");
  empty.hidden = state.conversations.length > 0;
  const loading = list.hasAttribute("aria-busy");
  empty.textContent = t(loading ? "conversations.loading" : "conversations.empty");
}

function setTitle(conversation) {
  $("conversation-title").textContent = conversation
    ? conversation.title || t("conversations.untitled")
    : t("conversation.new");
  $("delete-conversation").hidden = !conversation;
}

/** Delete the open conversation, once the person has said so. */
async function deleteCurrent() {
  const id = state.currentId;
  const token = state.token;
  if (!id || !token) return;
  if (state.stream) {
    // This page's own answer in it is still arriving: the server would refuse too.
    showError(t("conversation.delete_busy"));
    return;
  }
  const listed = state.conversations.find((c) => c.id === id);
  const title = (listed && listed.title) || t("conversations.untitled");
  if (!window.confirm(t("conversation.delete_confirm", { title }))) return;
  // Another conversation opened, or the person signed out, while the dialog was up.
  if (state.currentId !== id || state.token !== token) return;
  showError("");
  const button = $("delete-conversation");
  button.disabled = true;
  try {
    await deleteConversation(token, id);
  } catch (error) {
    // Gone already (deleted in another tab): what the person asked for is so.
    if (!(error instanceof ApiError && error.status === 404)) {
      if (state.currentId !== id || state.token !== token) return;
      if (error instanceof ApiError && error.status === 409) {
        showError(t("conversation.delete_busy"));
      } else {
        handleError(error);
      }
      return;
    }
  } finally {
    button.disabled = false;
  }
  if (state.token !== token) return; // signed out meanwhile: the page holds nothing of it
  state.conversations = state.conversations.filter((c) => c.id !== id);
  if (state.currentId === id) startNewConversation();
  else renderConversationList();
  announce(t("conversation.deleted"));
}

async function loadConversations() {
  const list = $("conversation-list");
  list.setAttribute("aria-busy", "true");
  renderConversationList();
  try {
    const fetched = await listConversations(state.token);
    // One started while the list was on its way may be missing from it.
    const listed = new Set(fetched.map((conversation) => conversation.id));
    const started = state.conversations.filter(
      (conversation) => conversation.id === state.currentId && !listed.has(conversation.id));
    state.conversations = [...started, ...fetched];
  } finally {
    list.removeAttribute("aria-busy");
    renderConversationList();
  }
}

function stopStream() {
  if (state.stream) state.stream.abort();
  state.stream = null;
  $("send").disabled = false;
}

async function openConversation(id) {
  stopStream();
  showError("");
  state.currentId = id;
  // Until its messages are shown, the title on the page is another conversation's.
  $("delete-conversation").hidden = true;
  renderConversationList();
  try {
    const conversation = await getConversation(state.token, id);
    if (state.currentId !== id) return; // another one was picked meanwhile
    setTitle(conversation);
    renderMessages(conversation.messages);
  } catch (error) {
    if (state.currentId !== id) return;
    if (error instanceof ApiError && error.status === 404) {
      state.conversations = state.conversations.filter((c) => c.id !== id);
      startNewConversation();
      showError(t("conversation.missing"));
      return;
    }
    handleError(error);
  }
}

function startNewConversation() {
  stopStream();
  showError("");
  state.currentId = null;
  renderConversationList();
  setTitle(null);
  renderMessages([]);
  $("composer-text").focus();
}

// ---- Asking ------------------------------------------------------------------------------

/** ``count`` seconds, in words of the page's language. */
function seconds(count) {
  return t(count === 1 ? "wait.second" : "wait.seconds", { count });
}

function messageOfError(error) {
  if (!(error instanceof ApiError)) {
    return t("error.unexpected", { status: "–", detail: String(error) });
  }
  if (error.status === 0) return t("error.unreachable");
  if (error.status === 403) return t("signin.guest");
  if (error.status === 404) return t("conversation.missing");
  if (error.status === 413) return t("error.too_large");
  // The server's detail is English; the page says it in the person's language, with the
  // wait its Retry-After names (a refusal for want of a stream slot has one; a service
  // that is down names none: it lasts until the service is back).
  const wait = error.retryAfter > 0 ? { wait: seconds(error.retryAfter) } : null;
  if (error.status === 429) return wait ? t("error.busy_retry", wait) : t("error.busy");
  // No stream slot free, or a service it needs away: either way, later.
  if (error.status === 503) {
    return wait ? t("error.unavailable_retry", wait) : t("error.unavailable");
  }
  if (error.status === 400 || error.status === 422) {
    return t("error.invalid", { detail: error.describe() });
  }
  return t("error.unexpected", { status: error.status, detail: error.describe() });
}

function handleError(error) {
  if (error instanceof ApiError && error.status === 401) {
    signOut(t("signin.expired"));
    return;
  }
  showError(messageOfError(error));
}

async function ask(text) {
  showError("");
  // The token of this question: a sign-out while it is on its way must not leave the
  // conversation made for it behind for want of one.
  const token = state.token;
  const question = userMessage(text);
  const shell = assistantShell("pending");
  shell.item.setAttribute("aria-busy", "true");
  shell.phase.textContent = t("phase.starting");
  $("messages").append(question, shell.item);
  $("conversation-intro").hidden = true;
  scrollToEnd();

  const known = $("messages").querySelectorAll(".message").length - 2;
  const controller = new AbortController();
  state.stream = controller;
  $("send").disabled = true;
  const citations = [];
  let answer = "";
  let finished = false;
  let received = false; // an event of the stream arrived: the server took the question
  let started = null; // the conversation made for this question, while it holds nothing
  try {
    if (!state.currentId) {
      const created = await createConversation(token, titleOf(text));
      if (controller.signal.aborted) {
        // Another conversation was picked meanwhile (or the person signed out); nothing
        // was asked in this one.
        deleteConversation(token, created.id).catch(() => {});
        return;
      }
      started = created;
      state.currentId = created.id;
      state.conversations.unshift(created);
      renderConversationList();
      setTitle(created);
    }
    for await (const event of askStreaming(token, state.currentId, text, controller.signal)) {
      received = true;
      window.dispatchEvent(new CustomEvent("ragplate:stream", { detail: event }));
      switch (event.type) {
        case "response.in_progress": {
          const phase = t(`phase.${event.phase}`);
          if (phase !== `phase.${event.phase}`) {
            shell.phase.textContent = phase;
            announce(phase);
          }
          break;
        }
        case "response.output_text.delta":
          shell.phase.remove(); // the answer itself now shows that it is coming
          answer += event.delta;
          shell.text.append(document.createTextNode(event.delta));
          scrollToEnd();
          break;
        case "response.output_text.annotation.added": {
          const note = event.annotation || {};
          const index = Number(note.index) || citations.length + 1;
          citations[index - 1] = {
            source_label: note.source_label,
            excerpt: note.excerpt,
            score: note.score,
          };
          shell.sources.replaceChildren(sourcesList(citations.filter(Boolean)));
          break;
        }
        case "response.output_text.done":
          answer = event.text ?? answer;
          fillAnswer(shell.text, answer, citations);
          break;
        case "response.refusal.done":
          setStatus(shell, "refused");
          shell.text.textContent = event.refusal;
          shell.sources.replaceChildren();
          scrollToEnd();
          break;
        case "response.completed": {
          finished = true;
          const message = event.response && event.response.message;
          if (message) {
            const done = assistantMessage(message);
            shell.item.replaceWith(done);
            scrollToEnd();
            announce(BADGES[message.status] ? t(BADGES[message.status]) : "");
          } else {
            shell.phase.remove();
            setStatus(shell, "answered");
            shell.item.removeAttribute("aria-busy");
            announce("");
          }
          break;
        }
        case "response.failed": {
          finished = true;
          const failure = (event.response && event.response.error) || {};
          fail(shell, t("error.failed", { message: failure.message || failure.code || "" }));
          break;
        }
        default:
          break; // response.created, and any event this page does not know
      }
    }
    if (!finished && !controller.signal.aborted) interrupted(shell, state.currentId, known);
  } catch (error) {
    if (controller.signal.aborted || error.name === "AbortError") return;
    const unsent = error instanceof ApiError && error.status === 0 && !state.currentId;
    if (unsent) {
      // Not even a conversation could be made: nothing was stored, the question goes back.
      question.remove();
      shell.item.remove();
      $("conversation-intro").hidden = $("messages").children.length > 0;
      if (!$("composer-text").value) $("composer-text").value = text;
      handleError(error);
    } else if (error instanceof ApiError && error.status !== 0 && !finished) {
      // Refused before the stream began: nothing was stored; the question goes back to
      // the composer to be sent again.
      question.remove();
      shell.item.remove();
      $("conversation-intro").hidden = $("messages").children.length > 0;
      if (!$("composer-text").value) $("composer-text").value = text;
      if (error.status === 404) {
        // Deleted elsewhere: its messages go with it, and the question starts a new one.
        state.conversations = state.conversations.filter((c) => c.id !== state.currentId);
        state.currentId = null;
        renderConversationList();
        setTitle(null);
        renderMessages([]);
      } else if (started && REFUSED_BEFORE_WORK.has(error.status)) {
        // Made for this question alone, it would stay listed empty for good. Only the
        // statuses the API answers before doing anything: a proxy's 502 or 504 may come
        // after the answer was stored.
        await discard(token, started.id);
        if (controller.signal.aborted) return; // the person moved on meanwhile
      }
      handleError(error);
    } else if (!finished && error instanceof ApiError && error.status !== 0) {
      fail(shell, messageOfError(error));
    } else if (!finished) {
      // Before any event the question may never have reached the server: if no answer
      // shows up, it goes back to the composer.
      interrupted(shell, state.currentId, known, received ? null : { text, started, token });
    }
  } finally {
    if (state.stream === controller) {
      state.stream = null;
      $("send").disabled = false;
    }
  }
}

/** Delete the conversation ``id`` that the page made for a question the assistant refused
 * before accepting it (so it holds no message); the next question makes a new one. Kept
 * when the server does not delete it (the next question then goes to it). */
async function discard(token, id) {
  try {
    await deleteConversation(token, id);
  } catch (error) {
    if (!(error instanceof ApiError && error.status === 404)) return;
  }
  state.conversations = state.conversations.filter((c) => c.id !== id);
  if (state.currentId === id) {
    state.currentId = null;
    setTitle(null);
  }
  renderConversationList();
}

/** The delivery broke off, not the answer: the server stores it whether or not anyone
 * reads the stream, so the conversation is read again for a while and shown once the
 * answer is there. ``unsent`` (the question's text, the conversation made for it and the
 * token) when no event had arrived: if no answer shows up, the question may never have
 * reached the server, and goes back to the composer (the conversation made for it alone
 * is deleted). */
async function interrupted(shell, id, known, unsent = null) {
  fail(shell, t("error.interrupted"));
  for (let attempt = 0; attempt < RECOVERY_ATTEMPTS; attempt++) {
    await new Promise((resolve) => setTimeout(resolve, RECOVERY_PAUSE_MS));
    if (!id || state.currentId !== id || !state.token) return;
    try {
      const conversation = await getConversation(state.token, id);
      const messages = conversation.messages;
      const last = messages[messages.length - 1];
      if (messages.length >= known + 2 && last && last.role === "assistant") {
        if (state.currentId === id) renderMessages(messages);
        return;
      }
    } catch (error) {
      // The server may be restarting: read again at the next attempt.
    }
  }
  // The request failed before the server sent a byte (a slow answer still streams its
  // phases, and a proxy's timeout is a status, not this): most likely never received.
  if (!unsent || state.currentId !== id) return;
  fail(shell, t("error.undelivered"));
  if (!$("composer-text").value) $("composer-text").value = unsent.text;
  if (unsent.started) await discard(unsent.token, unsent.started.id).catch(() => {});
}

const RECOVERY_ATTEMPTS = 10;
const RECOVERY_PAUSE_MS = 1500;

function fail(shell, text) {
  setStatus(shell, "failed");
  shell.phase.remove();
  shell.item.removeAttribute("aria-busy");
  const note = el("p", { className: "failure" }, text);
  shell.sources.replaceChildren(note);
  announce(text);
  scrollToEnd();
}

// ---- Signing in and out ------------------------------------------------------------------

function showSignin(message = "") {
  show("signin");
  $("signin-error").textContent = message;
  $("token").value = "";
  $("token").focus();
}

async function enter(token, { fromForm = false } = {}) {
  let found;
  try {
    found = await capabilities(token);
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) {
      sessionStorage.removeItem(TOKEN_KEY);
      // An expired token is no typo: the person needs a new one, not another look at it.
      const expired = /expired/i.test(error.describe());
      showSignin(t(!fromForm ? "signin.expired"
        : expired ? "signin.token_expired" : "signin.invalid"));
    } else if (error instanceof ApiError && error.status === 403) {
      sessionStorage.removeItem(TOKEN_KEY);
      showSignin(t("signin.guest"));
    } else {
      // The server being away says nothing of the token: a reload tries it again.
      showSignin(messageOfError(error));
    }
    return;
  }
  state.token = token;
  sessionStorage.setItem(TOKEN_KEY, token);
  sessionStorage.setItem(LOCALE_KEY, found.locale || "en");
  if (Number.isInteger(found.max_message_chars) && found.max_message_chars > 0) {
    state.maxChars = found.max_message_chars;
  }
  applyLanguage(found.locale);
  show("chat");
  startNewConversation();
  try {
    await loadConversations();
  } catch (error) {
    handleError(error);
  }
}

function signOut(message = "") {
  stopStream();
  state.token = null;
  state.conversations = [];
  state.currentId = null;
  sessionStorage.removeItem(TOKEN_KEY);
  $("conversation-list").replaceChildren();
  $("messages").replaceChildren();
  $("composer-text").value = "";
  showError("");
  showSignin(message);
}

// ---- Wiring ------------------------------------------------------------------------------

function wire() {
  $("signin-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    // A pasted "Bearer rp_…" header value works as well as the bare token.
    const token = $("token").value.trim().replace(/^bearer\s+/i, "");
    if (!token) {
      $("signin-error").textContent = t("signin.empty");
      return;
    }
    const submit = $("signin-submit");
    submit.disabled = true;
    submit.textContent = t("signin.busy");
    try {
      await enter(token, { fromForm: true });
    } finally {
      submit.disabled = false;
      submit.textContent = t("signin.submit");
    }
  });

  $("signout").addEventListener("click", () => signOut());
  $("new-conversation").addEventListener("click", () => startNewConversation());
  $("delete-conversation").addEventListener("click", () => deleteCurrent());

  $("composer").addEventListener("submit", (event) => {
    event.preventDefault();
    const box = $("composer-text");
    const text = box.value.trim();
    if (!text || state.stream) return;
    // Characters as the server counts them (code points, not UTF-16 units).
    const length = Array.from(text).length;
    if (length > state.maxChars) {
      // Said before sending: the assistant would store the question and refuse it.
      showError(t("error.too_long", { limit: state.maxChars, length }));
      box.focus();
      return;
    }
    box.value = "";
    ask(text);
  });
  $("composer-text").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      $("composer").requestSubmit();
    }
  });

  const dialog = $("citation");
  dialog.addEventListener("click", (event) => {
    if (event.target === dialog) dialog.close(); // a click on the backdrop
  });
  dialog.addEventListener("close", () => {
    citationOpener?.focus();
    citationOpener = null;
  });
}

function boot() {
  applyLanguage(sessionStorage.getItem(LOCALE_KEY) || languageOf(navigator.language));
  wire();
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) enter(token);
  else showSignin();
}

boot();
