import { createReadStream } from 'node:fs';
import { appendFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

/**
 * Values of a long piece of work moved out of memory while it runs: one JSON line per value in a
 * private temporary file (mode 0600, its own directory), read back in order. Used where a whole
 * file's worth of results would otherwise stay in memory (an all-or-none import's events and failed
 * rows, D53). Values must survive JSON (dates come back as ISO text).
 */
export class JsonLinesSpill<T> {
  private dir?: string;
  private written = 0;

  constructor(private readonly prefix = 'spill-') {}

  /** Values moved to disk so far. */
  get count(): number {
    return this.written;
  }

  async add(values: readonly T[]): Promise<void> {
    if (values.length === 0) return;
    this.dir ??= await mkdtemp(join(tmpdir(), this.prefix));
    await appendFile(this.file(), values.map((v) => JSON.stringify(v)).join('\n') + '\n', { mode: 0o600 });
    this.written += values.length;
  }

  /** The values in the order they were added, `size` at a time. */
  async *read(size: number): AsyncGenerator<T[]> {
    if (!this.dir) return;
    const lines = createInterface({ input: createReadStream(this.file()), crlfDelay: Infinity });
    let chunk: T[] = [];
    for await (const line of lines) {
      if (line === '') continue;
      chunk.push(JSON.parse(line) as T);
      if (chunk.length >= size) {
        yield chunk;
        chunk = [];
      }
    }
    if (chunk.length > 0) yield chunk;
  }

  /** Removes the file (the work has ended, whichever way). */
  async dispose(): Promise<void> {
    if (this.dir) await rm(this.dir, { recursive: true, force: true });
    this.dir = undefined;
    this.written = 0;
  }

  private file(): string {
    return join(this.dir!, 'values.jsonl');
  }
}
