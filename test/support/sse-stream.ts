/** A Server-Sent Events reader over a real fetch stream, for the live-changes tests (D55). */
export type Rec = Record<string, any>;

export interface SseEvent {
  id?: string;
  event?: string;
  data?: string;
}

/** A real fetch stream of Server-Sent Events, parsed as it arrives. */
export class Stream {
  readonly events: SseEvent[] = [];
  comments = 0;
  status = 0;
  contentType = '';
  ended = false;
  private readonly abort = new AbortController();

  async open(url: string, headers: Record<string, string>): Promise<this> {
    const res = await fetch(url, { headers, signal: this.abort.signal });
    this.status = res.status;
    this.contentType = res.headers.get('content-type') ?? '';
    if (!res.ok || !res.body) {
      await res.text();
      this.ended = true;
      return this;
    }
    void this.read(res.body.getReader());
    return this;
  }

  private async read(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        let cut: number;
        while ((cut = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          const event: SseEvent = {};
          let comment = false;
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) comment = true;
            else {
              const i = line.indexOf(': ');
              const key = line.slice(0, i) as keyof SseEvent;
              event[key] = line.slice(i + 2);
            }
          }
          if (comment && !event.event) this.comments += 1;
          else this.events.push(event);
        }
      }
    } catch {
      // aborted
    }
    this.ended = true;
  }

  data(): Rec[] {
    return this.events.filter((e) => e.data).map((e) => ({ event: e.event, seq: Number(e.id), ...(JSON.parse(e.data!) as Rec) }));
  }

  close(): void {
    this.abort.abort();
  }
}

