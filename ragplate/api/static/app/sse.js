// Server-sent events read from a fetch() body. EventSource cannot send a POST with a body
// and an Authorization header, so the stream is parsed here, after the rules of the HTML
// standard's event-stream format: lines end in CRLF, LF or CR; a blank line ends an event;
// a line starting with ":" is a comment (the server's keep-alives); "data" lines join with
// a newline; an event left unfinished when the stream ends is dropped.

/** A parser fed text as it arrives; ``feed`` returns the events it completed. */
export class EventStreamParser {
  #buffer = "";
  #event = "";
  #data = [];

  /** The events completed by ``text``: ``{event, data}`` with ``data`` still a string. */
  feed(text) {
    this.#buffer += text;
    const events = [];
    for (;;) {
      const end = this.#buffer.search(/[\r\n]/);
      if (end < 0) break;
      // A CR that ends the buffer may be the first half of a CRLF split across chunks.
      if (this.#buffer[end] === "\r" && end === this.#buffer.length - 1) break;
      const width = this.#buffer.startsWith("\r\n", end) ? 2 : 1;
      const line = this.#buffer.slice(0, end);
      this.#buffer = this.#buffer.slice(end + width);
      const event = this.#line(line);
      if (event) events.push(event);
    }
    return events;
  }

  /** The events completed by the last ``text`` when the stream has ended: a final CR
   * ends its line; an event without its blank line is dropped. */
  finish(text = "") {
    const events = this.feed(text);
    if (this.#buffer.endsWith("\r")) {
      const event = this.#line(this.#buffer.slice(0, -1));
      if (event) events.push(event);
    }
    this.#buffer = "";
    this.#event = "";
    this.#data = [];
    return events;
  }

  #line(line) {
    if (line === "") {
      if (this.#data.length === 0) {
        this.#event = "";
        return null;
      }
      const event = { event: this.#event || "message", data: this.#data.join("\n") };
      this.#event = "";
      this.#data = [];
      return event;
    }
    if (line.startsWith(":")) return null;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") this.#event = value;
    else if (field === "data") this.#data.push(value);
    // "id" and "retry" serve reconnection, which a POST stream does not do.
    return null;
  }
}

/** The events of a fetch() response body, as they arrive; stops early when ``signal``
 * is aborted. */
export async function* readEvents(body, signal) {
  const reader = body.getReader();
  const decoder = new TextDecoder("utf-8");
  const parser = new EventStreamParser();
  const cancel = () => reader.cancel().catch(() => {});
  signal?.addEventListener("abort", cancel, { once: true });
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      yield* parser.feed(decoder.decode(value, { stream: true }));
    }
    yield* parser.finish(decoder.decode());
  } finally {
    signal?.removeEventListener("abort", cancel);
    reader.releaseLock();
  }
}
