// The assistant's HTTP API, as the page uses it. Every call carries the person's bearer
// token; an error answer is JSON {"error": CLASS, "detail": MESSAGE or [{loc, msg, type}]}
// with its status, thrown as an ApiError.

import { readEvents } from "./sse.js";

const BASE = "/app/ai";
/** The person's decisions on the writes the assistant proposed. */
const WRITES = "/app/crud/update/ai/assistant-writes";

/** An answer other than a success, or no answer at all (``status`` 0); ``retryAfter``: the
 * seconds its ``Retry-After`` header says to wait before asking again, or null. */
export class ApiError extends Error {
  constructor(status, error, detail, retryAfter = null) {
    super(`${status} ${error}`);
    this.status = status;
    this.error = error;
    this.detail = detail;
    this.retryAfter = retryAfter;
  }

  /** The detail as one line of text: a validation error's problems joined. */
  describe() {
    if (Array.isArray(this.detail)) {
      return this.detail
        .map((problem) => {
          const where = (problem.loc || []).filter((part) => part !== "body").join(".");
          return where ? `${where}: ${problem.msg}` : String(problem.msg);
        })
        .join("; ");
    }
    return this.detail == null ? this.error : String(this.detail);
  }
}

/** The seconds of a ``Retry-After`` header, or null. Only its delay-seconds form is read:
 * the API sends no other, and a date would be read against this computer's clock. */
export function retryAfterSeconds(value) {
  const text = String(value ?? "").trim();
  return /^\d{1,9}$/.test(text) ? Number(text) : null;
}

async function failure(response) {
  let body = null;
  try {
    body = await response.json();
  } catch {
    // A proxy's HTML error page, say: the status is all there is to say.
  }
  const error = body && typeof body.error === "string" ? body.error : response.statusText;
  return new ApiError(response.status, error || "Error", body ? body.detail : null,
    retryAfterSeconds(response.headers.get("Retry-After")));
}

async function send(token, method, path,
  { body, accept = "application/json", signal, headers: extra = {}, base = BASE } = {}) {
  const headers = { ...extra, Authorization: `Bearer ${token}`, Accept: accept };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let response;
  try {
    response = await fetch(`${base}${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal,
      cache: "no-store",
      credentials: "omit",
    });
  } catch (error) {
    if (error.name === "AbortError") throw error;
    throw new ApiError(0, "NetworkError", String(error.message || error));
  }
  if (!response.ok) throw await failure(response);
  return response;
}

async function json(token, method, path, options) {
  return (await send(token, method, path, options)).json();
}

/** ``{profile, features, actions, locale, policy_version}`` of the token's person. */
export function capabilities(token) {
  return json(token, "GET", "/capabilities");
}

/** The person's conversations ``[{id, title}]``, newest first. */
export function listConversations(token) {
  return json(token, "GET", "/conversations");
}

/** Start a conversation; ``{id, title}``. */
export function createConversation(token, title) {
  return json(token, "POST", "/conversations", { body: title ? { title } : {} });
}

/** ``{id, title, messages}``, the messages oldest first. */
export function getConversation(token, id) {
  return json(token, "GET", `/conversations/${encodeURIComponent(id)}`);
}

/** Delete a conversation with its messages (204, no body). */
export async function deleteConversation(token, id) {
  await send(token, "DELETE", `/conversations/${encodeURIComponent(id)}`);
}

/** A write the assistant proposed, as it stands now: the entry of ``metadata.writes`` with
 * its current ``status`` and ``outcome``. */
export function getWrite(token, id) {
  return json(token, "GET", `/${encodeURIComponent(id)}`, { base: WRITES });
}

/** The person's decision on a proposed write, ``"confirm"`` or ``"reject"``; answers the
 * proposal with its new ``status`` (or, when it was decided before, that first decision).
 * ``key`` goes as the ``Idempotency-Key`` header. */
export function decideWrite(token, id, decision, key) {
  if (decision !== "confirm" && decision !== "reject") {
    throw new Error(`not a decision: ${decision}`);
  }
  return json(token, "POST", `/${encodeURIComponent(id)}/${decision}`, {
    base: WRITES,
    headers: key ? { "Idempotency-Key": key } : {},
  });
}

/** Ask the assistant; yields the stream's events as parsed JSON (``type`` and
 * ``sequence_number`` in each), until the server closes the stream. */
export async function* askStreaming(token, conversationId, text, signal) {
  const response = await send(token, "POST", "/agent", {
    body: { conversation_id: conversationId, text, context: null },
    accept: "text/event-stream",
    signal,
  });
  const type = response.headers.get("content-type") || "";
  if (!type.startsWith("text/event-stream")) {
    throw new ApiError(response.status, "UnexpectedResponse", `not an event stream (${type})`);
  }
  for await (const { event, data } of readEvents(response.body, signal)) {
    let parsed;
    try {
      parsed = JSON.parse(data);
    } catch {
      continue; // not one of the assistant's events
    }
    if (parsed && typeof parsed === "object") {
      parsed.type ??= event;
      yield parsed;
    }
  }
}
